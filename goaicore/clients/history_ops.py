"""History operations over Kafka: undo, rewind, fork, metadata, deletion and erasure,
each an event appended to the log.

The rules (what each operation appends, and when it is refused) are
:mod:`goaicore.store.history`'s; this client reads the conversation's partition of
``events`` with kafka-python, folds it, and appends through the publisher (or the
intake, where the workers seal).
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import TYPE_CHECKING

from goaicore.clients.publisher import EventPublisher
from goaicore.clients.snapshots import SnapshotReader
from goaicore.config import Settings
from goaicore.fold.policy import PolicyTimeline
from goaicore.fold.records import fold_records
from goaicore.lifecycle import Closing
from goaicore.records import (
    ConversationDeleted,
    ConversationErased,
    ConversationEvent,
    ConversationKey,
    TopicPosition,
    new_event,
    utc_now,
)
from goaicore.records.types import EventBody
from goaicore.records.validation import check_conversation_id
from goaicore.replay.reader import HistoryReader
from goaicore.sealing.keyring import TopicKeys, doomed_by
from goaicore.store import history
from goaicore.store.errors import ConversationNotFound, OperationPending, OperationRefused
from goaicore.store.history import SOURCE, Erased, Forked, Rewound, Scan, Stop, Undone

if TYPE_CHECKING:
    from goaicore.clients.chat_client import ChatClient
    from goaicore.records import ChatReply

__all__ = [
    "ConversationNotFound",
    "Erased",
    "Forked",
    "HistoryOperations",
    "OperationPending",
    "OperationRefused",
    "Rewound",
    "Undone",
]


class HistoryOperations(Closing):
    """Undo, rewind, fork and set metadata on conversations (see the module docstring).

    Every call reads what it needs from the log and appends one event, or raises
    :class:`InvalidInputError` and appends nothing when the operation cannot apply; when
    the fold refused the appended event (the conversation changed meanwhile), it raises
    :class:`OperationRefused` saying so, and the event changed nothing.
    """

    def __init__(self, settings: Settings | None = None) -> None:
        self.settings = settings or Settings()
        self._reader = HistoryReader(self.settings)
        self._snapshots = SnapshotReader(self.settings)
        self._publisher = EventPublisher(self.settings, source=SOURCE)
        self._intake: EventPublisher | None = None  # for sealed conversations, intake off
        self._topic_keys: TopicKeys | None = None

    def rewind(self, conversation_id: str, until_offset: int, reason: str = "rewind") -> Rewound:
        """Make the history what it was after the event at ``until_offset`` (-1: empty)."""
        history.check_until_offset(until_offset)
        policy = self._policy(conversation_id)
        found = self._scan(
            conversation_id, policy, history.after_offset(until_offset), copies_content=True
        )
        return self._rewind(conversation_id, found, until_offset, reason, policy)

    def undo(self, conversation_id: str, ask_again: bool = False) -> Undone:
        """Rewind to just before the last user message still in the history (the events
        after it, game events included, leave the history with it). ``ask_again``:
        refuse, before anything is appended, a message a chat request cannot carry again
        (multimodal content)."""
        return self._undo(conversation_id, ask_again)

    def regenerate(
        self, conversation_id: str, client: ChatClient, timeout: float = 60.0
    ) -> ChatReply:
        """Undo the last exchange, then ask its user message again (as the log holds it)."""
        undone = self._undo(conversation_id, ask_again=True)
        return client.ask(conversation_id, undone.text, timeout=timeout)

    def fork(
        self,
        source_id: str,
        new_id: str,
        before_offset: int | None = None,
        as_of: datetime | None = None,
    ) -> Forked:
        """Start ``new_id`` with ``source_id``'s history from its events at offsets below
        ``before_offset``, or up to the first event that occurred after ``as_of`` (one
        of the two; neither: all of them). Later events of the source never reach it."""
        stop = history.fork_stop(source_id, new_id, before_offset, as_of)
        found = self._scan(source_id, self._policy(source_id), stop, copies_content=True)
        history.refuse_fork_into(new_id, any(True for _ in self._reader.records(new_id)))
        body = history.forked(source_id, found, before_offset)
        position = self._append(new_id, body, self._policy(new_id), related=(source_id,))
        return Forked(position, found.partition, body.until_offset, len(body.messages))

    def set_metadata(
        self,
        conversation_id: str,
        title: str | None = None,
        owner: str | None = None,
        tags: Iterable[str] | None = None,
        attributes: Mapping[str, str | None] | None = None,
    ) -> TopicPosition:
        """Change the title, owner, tags (replacing them) or attributes (None removes one);
        what is left None stays as it is, and an empty title or owner removes it. A
        conversation without events yet starts with its metadata."""
        policy = self._policy(conversation_id)
        change = history.metadata_change(conversation_id, title, owner, tags, attributes, policy)
        return self._append(conversation_id, change, policy)

    def delete(self, conversation_id: str, reason: str = "") -> TopicPosition:
        """Delete the conversation: its history and metadata leave the snapshot (the log
        keeps its events), and the fold takes nothing after it. Refused for a conversation
        without events or already deleted."""
        policy = self._policy(conversation_id)
        self._scan(conversation_id, policy)  # not found, or deleted: refused here
        return self._append(conversation_id, ConversationDeleted(reason=reason), policy)

    def erase(
        self,
        conversation_id: str,
        reason: str = "",
        timeout: float = 30.0,
        name_forks: bool = True,
    ) -> Erased:
        """Erase the conversation's content, keeping its audit skeleton.

        Appends :class:`ConversationErased`: the fold clears the history, summary, notes
        and metadata, and the worker that owns the conversation destroys its data key
        (a tombstone on the keys topic), so every sealed copy of its content can no
        longer be opened; ids, types, times, token counts and costs stay. Returns once
        the key's tombstone is on the broker (waiting at most ``timeout`` seconds for
        the worker). Refused for a conversation without events; erasing again, or a
        deleted conversation, is allowed. ``name_forks`` reads every snapshot to name
        the forks (and their forks) that keep a copy of the history.
        """
        policy = self._policy(conversation_id)
        self._scan(conversation_id, policy, allow_deleted=True)
        forks = self.forks_of(conversation_id) if name_forks else ()
        had_key = self._key_of(conversation_id) is not None
        erasure = ConversationErased(reason=reason)
        position = self._append(conversation_id, erasure, policy, wait=timeout)
        if not had_key:
            return Erased(position, key_destroyed=False, forks=forks)
        deadline = time.monotonic() + timeout
        while doomed_by(self._key_of(conversation_id), position.offset):
            if time.monotonic() > deadline:
                raise OperationRefused(
                    f"erasure appended at {position} and folded, but the data key of "
                    f"{conversation_id!r} was not destroyed within {timeout:.0f} s: is a "
                    "store worker running? It destroys the key when it folds the erasure"
                )
            time.sleep(0.1)
        return Erased(position, key_destroyed=True, forks=forks)

    def forks_of(self, conversation_id: str, progress: bool | None = False) -> tuple[str, ...]:
        """The conversations forked from this one, and from those, in order: each holds
        a copy of history it took from here."""
        return history.forks_of(conversation_id, self._snapshots.all(progress))

    def idle(
        self, days: float, now: datetime | None = None, progress: bool | None = None
    ) -> list[str]:
        """Conversations with content whose last event is more than ``days`` old: what a
        retention policy erases. One erased with nothing since is not listed again."""
        if days <= 0:  # refused before the snapshots are read
            history.idle({}, days, utc_now())
        return history.idle(self._snapshots.all(progress), days, now or utc_now())

    def close(self) -> None:
        self._reader.close()
        self._snapshots.close()
        self._publisher.close()
        if self._intake is not None:
            self._intake.close()
        if self._topic_keys is not None:
            self._topic_keys.close()

    def _policy(self, conversation_id: str) -> PolicyTimeline:
        """The bounds the worker folded this conversation under (its stored snapshot's)."""
        stored = self._snapshots.get(conversation_id)
        return history.policy_for(stored, self.settings.max_record_bytes)

    def _undo(self, conversation_id: str, ask_again: bool) -> Undone:
        policy = self._policy(conversation_id)
        found = self._scan(conversation_id, policy, copies_content=True)
        offset, text = history.last_user_message(conversation_id, found, ask_again)
        then = self._scan(conversation_id, policy, history.from_offset(offset))
        rewound = self._rewind(conversation_id, then, offset - 1, "undo", policy)
        return Undone(rewound.position, rewound.until_offset, rewound.messages, text)

    def _scan(
        self,
        conversation_id: str,
        policy: PolicyTimeline,
        stop: Stop | None = None,
        allow_deleted: bool = False,
        copies_content: bool = False,
    ) -> Scan:
        check_conversation_id(conversation_id)
        records = self._reader.records(conversation_id)
        outcomes = fold_records(records, policy, keys=self._reader.keys)
        return history.scan(conversation_id, outcomes, stop, allow_deleted, copies_content)

    def _rewind(
        self,
        conversation_id: str,
        found: Scan,
        until_offset: int,
        reason: str,
        policy: PolicyTimeline,
    ) -> Rewound:
        body = history.rewound(conversation_id, found, until_offset, reason)
        position = self._append(conversation_id, body, policy)
        return Rewound(position, until_offset, len(body.messages))

    def _append(
        self,
        conversation_id: str,
        body: EventBody,
        policy: PolicyTimeline,
        related: tuple[str, ...] = (),
        wait: float | None = None,
    ) -> TopicPosition:
        """Append ``body``, then fold the log up to it: refused if the fold did not apply it.

        Through ``intake`` (GOAICORE_INTAKE, or a conversation here or in ``related``
        with a data key: its workers seal), the event's place in ``events`` is where the
        worker sealed it: the log is read again until it is there, for ``wait`` seconds
        (``read_wait``, at least a second, unless given).
        """
        event = new_event(conversation_id, body, source=SOURCE)
        position = self._publisher_for((conversation_id, *related)).publish(conversation_id, event)
        direct = position.topic == self._reader.topic
        patience = wait if wait is not None else max(self.settings.read_wait, 1.0)
        deadline = time.monotonic() + patience
        while True:
            until = position.offset if direct else None
            found = self._fold_to(conversation_id, event, policy, until)
            if found is not None:
                return found
            if direct:
                return position
            if time.monotonic() > deadline:
                raise OperationPending(
                    f"appended to {position}, but no store worker sealed it into "
                    f"{self._reader.topic} within {patience:.0f} s: is one running? It takes "
                    "effect once one does; do not repeat it"
                )
            time.sleep(0.1)

    def _publisher_for(self, conversations: Iterable[str]) -> EventPublisher:
        """The intake's publisher where the workers seal (GOAICORE_INTAKE, or one of
        ``conversations`` has a data key): never the clear log for sealed content."""
        if self.settings.intake:
            return self._publisher
        if all(self._key_of(c) is None for c in conversations):
            return self._publisher
        if self._intake is None:
            intake = self.settings.with_overrides(intake_override=True)
            self._intake = EventPublisher(intake, source=SOURCE)
        return self._intake

    def _key_of(self, conversation_id: str) -> ConversationKey | None:
        """The conversation's data key as the keys topic holds it now (read on to its end:
        a key may have been made or destroyed since the last look)."""
        if self._topic_keys is None:
            self._topic_keys = TopicKeys(self.settings)
        self._topic_keys.refresh(conversation_id)
        return self._topic_keys.stored.get(conversation_id)

    def _fold_to(
        self,
        conversation_id: str,
        event: ConversationEvent,
        policy: PolicyTimeline,
        until_offset: int | None,
    ) -> TopicPosition | None:
        """Where ``event`` is in the log, once the fold applied it; None: not there yet."""
        records = self._reader.records(conversation_id, until_offset=until_offset)
        outcomes = fold_records(records, policy, keys=self._reader.keys)
        return history.applied_at(outcomes, event, policy, self._reader.topic)
