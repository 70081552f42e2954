"""The data keys of the conversations this worker owns: sealing and erasure without races.

The keys table's changelog IS the keys topic (compacted, keyed by conversation id),
and a conversation's partition has one owner at a time, so the worker that owns a
conversation is the single writer of its key: it makes the key the first time it
seals something of the conversation, and writes it to the broker (awaiting the
acknowledgement) before anything sealed under it. A restarted worker recovers the
table like the snapshots table.

Folding an erasure destroys the key made before it (a tombstone). A key records the
erasure it was made after, so reading the log a second time (after a crash, or a
rebuild) never destroys the key of the content that followed. Making, destroying and
wrapping again (master key rotation) a conversation's key take turns under one lock
per conversation. An erasure this worker appended itself (from the intake) counts from
the moment it is on the log, before the fold reaches it: what is sealed after it is
sealed under a key made after it, which the erasure does not destroy.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager

from goaicore.kafka.faust.durable_table import DurableTable
from goaicore.records import ConversationKey, LogPosition
from goaicore.sealing.keyring import KeyRing, doomed_by
from goaicore.sealing.keys import DataKey, KeyUnusable, MasterKeys, rewrap, wrap

log = logging.getLogger(__name__)


class ConversationKeys:
    """Make, keep, look up and destroy data keys; ``masters`` None means sealing is off.

    ``erased_before`` gives a conversation's latest folded erasure (its snapshot's).
    """

    def __init__(
        self,
        table: DurableTable,
        masters: MasterKeys | None,
        erased_before: Callable[[str], LogPosition | None],
    ) -> None:
        self.table = table
        self.masters = masters
        self._erased_before = erased_before
        self._ring = KeyRing(masters, self.stored) if masters is not None else None
        self._locks: dict[str, tuple[asyncio.Lock, list[int]]] = {}
        self._appended_erasures: dict[str, int] = {}  # offsets in events, not yet folded

    @property
    def sealing(self) -> bool:
        return self._ring is not None

    def stored(self, conversation_id: str) -> ConversationKey | None:
        key: ConversationKey | None = self.table.get(conversation_id.encode())
        return key

    def lookup(self, conversation_id: str, key_id: str) -> DataKey | None:
        """The key a sealed event names, for the fold; None once erased.

        Without master keys nothing sealed can be opened, and folding sealed events
        as erased would empty the snapshots of conversations that were never erased:
        that is a configuration fault, raised.
        """
        if self._ring is None:
            raise KeyUnusable(
                "the events topic holds sealed events and GOAICORE_MASTER_KEYS is not set "
                "for this worker: set it to the master keys they were sealed under"
            )
        return self._ring.lookup(conversation_id, key_id)

    async def key_for(self, conversation_id: str) -> DataKey:
        """The key to seal the conversation's records under: made, and on the broker,
        before it is returned the first time (and again after each erasure)."""
        if self._ring is None or self.masters is None:
            raise KeyUnusable("sealing needs GOAICORE_MASTER_KEYS")
        key = self._usable(conversation_id)
        if key is not None:
            return key
        async with self._turn(conversation_id):
            key = self._usable(conversation_id)  # made while this one waited
            if key is None:
                key = DataKey.generate()
                wrapped = dataclasses.replace(
                    wrap(self.masters, conversation_id, key),
                    after_erasure_offset=self._latest_erasure(conversation_id),
                )
                await self.table.put(conversation_id.encode(), wrapped)
            return key

    async def forget(self, conversation_id: str, erasure_offset: int) -> bool:
        """Destroy the key made before the erasure at ``erasure_offset`` (if it is still
        stored), returning once its tombstone is on the broker; compaction then removes
        it from the keys topic's disk. True when a key was destroyed."""
        async with self._turn(conversation_id):
            stored = self.stored(conversation_id)
            if not doomed_by(stored, erasure_offset):
                return False
            await self.table.remove(conversation_id.encode())
            return True

    async def rewrap_owned(self, owned: Callable[[str], bool], limit: int = 1000) -> int:
        """Wrap again under the current master key (rotation) up to ``limit`` keys of
        conversations this worker owns that an older master key wraps; how many were.

        A key whose master key is no longer held cannot be; it is logged and skipped.
        """
        if self.masters is None:
            return 0
        current = self.masters.current.key_id
        stale = [
            key.conversation_id
            for key in list(self.table.values())
            if key is not None and key.master_key_id != current and owned(key.conversation_id)
        ]
        done = 0
        for conversation_id in stale[:limit]:
            async with self._turn(conversation_id):
                stored = self.stored(conversation_id)
                if stored is None or stored.master_key_id == current:
                    continue
                try:
                    again = rewrap(self.masters, stored)
                except KeyUnusable as err:
                    log.warning("cannot wrap the key of %r again: %s", conversation_id[:200], err)
                    continue
                await self.table.put(conversation_id.encode(), again)
                done += 1
        return done

    def erasure_appended(self, conversation_id: str, offset: int) -> None:
        """This worker put an erasure of the conversation at ``offset`` of ``events``."""
        known = self._appended_erasures.get(conversation_id, -1)
        self._appended_erasures[conversation_id] = max(known, offset)

    def _latest_erasure(self, conversation_id: str) -> int | None:
        """The offset of the latest erasure folded, or appended here and not folded yet."""
        folded = self._erased_before(conversation_id)
        folded_at = folded.offset if folded is not None else None
        appended = self._appended_erasures.get(conversation_id)
        if appended is None:
            return folded_at
        if folded_at is not None and folded_at >= appended:
            del self._appended_erasures[conversation_id]  # the fold has caught up
            return folded_at
        return appended

    def _usable(self, conversation_id: str) -> DataKey | None:
        """The stored key, unless an erasure since it was made dooms it."""
        stored = self.stored(conversation_id)
        if stored is None or self._ring is None:
            return None
        erasure = self._latest_erasure(conversation_id)
        if erasure is not None and doomed_by(stored, erasure):
            return None
        return self._ring.lookup(conversation_id, stored.key_id)

    @asynccontextmanager
    async def _turn(self, conversation_id: str) -> AsyncIterator[None]:
        """One lock per conversation, dropped when nobody holds or waits for it."""
        lock, users = self._locks.setdefault(conversation_id, (asyncio.Lock(), [0]))
        users[0] += 1
        try:
            async with lock:
                yield
        finally:
            users[0] -= 1
            if users[0] == 0:
                del self._locks[conversation_id]
