"""Conversations' data keys as the keys topic holds them, unwrapped once each.

The keys topic is compacted and keyed by conversation id: its latest record for a
conversation is the key that conversation's content is sealed under, and a tombstone
means the conversation was erased. The worker that owns a conversation writes it
(its keys table's changelog); every other reader follows the topic
(:class:`TopicKeys`) and looks keys up here.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, MutableMapping
from typing import Any

from goaicore.extras import needs
from goaicore.lifecycle import Closing
from goaicore.records import ConversationKey, ConversationSnapshot
from goaicore.records.avro.api import decode_key
from goaicore.records.avro.errors import DecodeError
from goaicore.sealing.keys import DataKey, MasterKeys, unwrap
from goaicore.settings import Settings

log = logging.getLogger(__name__)


class KeyRing:
    """Data keys looked up by conversation and key id; None once a key is gone (erased).

    ``find`` returns a conversation's stored :class:`ConversationKey` (the worker's keys
    table, or the topic as read); ``refresh``, when given, catches up with the topic
    on a miss: a key is on the broker before anything sealed under it, so a miss after
    the refresh means the key is gone. A key is unwrapped on first use and kept while
    the same record is stored.
    """

    def __init__(
        self,
        masters: MasterKeys,
        find: Callable[[str], ConversationKey | None],
        refresh: Callable[[str], None] | None = None,
    ) -> None:
        self.masters = masters
        self._find = find
        self._refresh = refresh
        self._unwrapped: dict[str, tuple[ConversationKey, DataKey]] = {}
        self._gone: set[tuple[str, str]] = set()  # missed after a refresh: never back

    def lookup(self, conversation_id: str, key_id: str) -> DataKey | None:
        """The data key ``key_id`` of ``conversation_id``; None when it is not stored.

        A key stored but not opening under the master keys held raises
        :class:`~goaicore.sealing.keys.KeyUnusable`: a configuration fault, never
        taken for an erasure.
        """
        if (conversation_id, key_id) in self._gone:
            return None
        stored = self._find(conversation_id)
        if (stored is None or stored.key_id != key_id) and self._refresh is not None:
            self._refresh(conversation_id)
            stored = self._find(conversation_id)
            if stored is None or stored.key_id != key_id:
                self._gone.add((conversation_id, key_id))
        if stored is None or stored.key_id != key_id:
            return None
        known = self._unwrapped.get(conversation_id)
        if known is not None and known[0] == stored:
            return known[1]
        key = unwrap(self.masters, stored)
        self._unwrapped[conversation_id] = (stored, key)
        return key

    def __call__(self, conversation_id: str, key_id: str) -> DataKey | None:
        return self.lookup(conversation_id, key_id)


def doomed_by(key: ConversationKey | None, erasure_offset: int) -> bool:
    """``key`` is one the erasure at ``erasure_offset`` (in ``events``) destroys: made
    before it. A key made after an erasure names it, and survives it."""
    if key is None:
        return False
    return key.after_erasure_offset is None or key.after_erasure_offset < erasure_offset


def not_erased(unopened: Iterable[int], snapshot: ConversationSnapshot) -> list[int]:
    """The offsets of sealed events not opened that no erasure ``snapshot`` folded covers:
    content unreadable without an erasure (a key lost, or a master key not held here)."""
    erased = snapshot.erased_before
    return [offset for offset in unopened if erased is None or offset > erased.offset]


def master_keys(settings: Settings) -> MasterKeys | None:
    """The master keys configured (GOAICORE_MASTER_KEYS), or None: sealing is off."""
    return MasterKeys.parse(settings.master_keys) if settings.master_keys else None


def apply_key_records(
    stored: MutableMapping[str, ConversationKey], records: Iterable[Any], topic: str
) -> None:
    """Follow the keys topic: each record replaces its conversation's key, a tombstone
    removes it; a record that does not decode is logged and skipped."""
    for record in records:
        if record.key is None:
            continue
        conversation_id = bytes(record.key).decode("utf-8", "replace")
        if record.value is None:
            stored.pop(conversation_id, None)
            continue
        try:
            key = decode_key(record.value)
        except DecodeError as err:
            log.warning(
                "skipped a record of %s[%d]@%d: %s", topic, record.partition, record.offset, err
            )
            continue
        if key.conversation_id == conversation_id:
            stored[conversation_id] = key


class TopicKeys(Closing):
    """The keys topic as read by a process other than the worker: each partition read
    to its end when a key of it is first wanted, and again on a miss."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.topic = settings.topic("keys")
        self.stored: dict[str, ConversationKey] = {}
        self._next: dict[int, int] = {}
        self._consumer: Any = None
        self._partitions = 0

    def find(self, conversation_id: str) -> ConversationKey | None:
        if self._partition_of(conversation_id) not in self._next:
            self.refresh(conversation_id)
        return self.stored.get(conversation_id)

    def refresh(self, conversation_id: str) -> None:
        """Read the conversation's partition of the keys topic on to its end."""
        from goaicore.kafka.partition_reader import read_to_end

        with needs("kafka"):
            from kafka import TopicPartition

        number = self._partition_of(conversation_id)
        partition = TopicPartition(self.topic, number)
        start = self._next.get(number)
        records = list(read_to_end(self._consumer, partition, start, settings=self.settings))
        apply_key_records(self.stored, records, self.topic)
        self._next[number] = records[-1].offset + 1 if records else (start or 0)

    def _partition_of(self, conversation_id: str) -> int:
        from goaicore.kafka.connection import make_consumer, topic_partitions
        from goaicore.kafka.partitioner import partition_for

        if self._consumer is None:
            self._consumer = make_consumer(self.settings)
            self._partitions = len(topic_partitions(self._consumer, self.topic))
        return partition_for(conversation_id, self._partitions)

    def close(self) -> None:
        if self._consumer is not None:
            self._consumer.close()
            self._consumer = None


def topic_key_ring(settings: Settings) -> tuple[KeyRing, TopicKeys] | None:
    """A key ring over the keys topic (close the :class:`TopicKeys` when done), or None
    without master keys: nothing sealed can then be opened."""
    masters = master_keys(settings)
    if masters is None:
        return None
    keys = TopicKeys(settings)
    return KeyRing(masters, keys.find, keys.refresh), keys
