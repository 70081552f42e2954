"""GoaicoreSession: the OpenAI Agents SDK's ``Session`` protocol over a conversation store.

Each call is one of the store port's use cases on the session's conversation (named
by the session id unless given another): ``add_items`` appends the items' events
together (one record batch, all or none), ``get_items`` reads the folded history (after
this session's own last write), ``pop_item`` and ``clear_session`` are history
operations in the log (a ``ConversationRewound``: nothing is deleted, and replay, undo,
fork and erasure keep working), and the SDK's compaction hook (``run_compaction``) runs a
goaicore compactor, recorded as a ``CompactionApplied``. Items map to events as
:mod:`.items` says.

The store's connections belong to one event loop, and the SDK calls a session from
several (``Runner.run_sync`` runs its own): every call runs on goaicore's private loop
(:func:`goaicore.sync.on_private_loop`), so the session works from any loop or thread.
"""

from __future__ import annotations

import threading
from collections.abc import Coroutine, Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from goaicore.conversation.compaction.asking import compacted
from goaicore.conversation.compaction.protocol import (
    CompactionRequest,
    Compactor,
    RequestCompactor,
)
from goaicore.conversation.compaction.wire import to_compaction_applied
from goaicore.conversation.snapshot_messages import to_chat_messages
from goaicore.extras import needs
from goaicore.fold.fold import history_message
from goaicore.integrations.openai_agents import items as agent_items
from goaicore.integrations.openai_agents.items import PROVIDER
from goaicore.records import SnapshotMessage, TopicPosition, new_event
from goaicore.records.validation import check_conversation_id
from goaicore.store.port import Appended, ConversationStore
from goaicore.sync import on_private_loop, run_cleanup

with needs("agents"):
    from agents.memory.session_settings import (
        SessionSettings,
        coerce_session_settings,
        resolve_session_limit,
    )

if TYPE_CHECKING:
    from agents.items import TResponseInputItem

T = TypeVar("T")

SOURCE = "openai-agents"
"""The ``source`` of the events a session appends."""


class GoaicoreSession:
    """An Agents SDK session whose history is the goaicore conversation ``session_id``.

    ``store``: any :class:`~goaicore.store.port.ConversationStore` (the in-memory one,
    one over Kafka, ...); by default one over Kafka from the environment's settings,
    opened on first use and closed with the session. ``session_settings``: the SDK's
    ``SessionSettings`` or a dict of its fields (TypeError: a field it does not have).
    ``conversation_id``: the conversation holding the history when it is not named
    ``session_id`` (the SDK sees ``session_id``, e.g. as the runs' group id; the log
    holds ``conversation_id``). ``compactor``: what the SDK's compaction hook runs (e.g.
    a :class:`~goaicore.conversation.compaction.TriggeredCompactor`); None: the hook does
    nothing. ``timeout``: how long a call waits for the store workers (e.g. for the fold
    to apply this session's last write).
    """

    def __init__(
        self,
        session_id: str,
        store: ConversationStore | None = None,
        *,
        session_settings: SessionSettings | dict[str, Any] | None = None,
        conversation_id: str | None = None,
        compactor: Compactor | RequestCompactor | None = None,
        timeout: float = 30.0,
    ) -> None:
        self.conversation_id = check_conversation_id(
            session_id if conversation_id is None else conversation_id
        )
        self.session_id = session_id
        self.session_settings: SessionSettings | None = (
            SessionSettings()
            if session_settings is None
            else coerce_session_settings(session_settings)
        )
        self.compactor = compactor
        self.timeout = timeout
        self._store = store
        self._owns_store = store is None
        self._last: Appended | None = None
        """This session's furthest write in the log: reads wait until the fold has applied it."""
        self._unsure: tuple[tuple[str, ...], tuple[str, ...]] | None = None
        """The items of the last add_items that failed and the event ids it sent: the
        same items added again reuse those ids, which the fold applies once."""
        self._closed = threading.Event()

    def __repr__(self) -> str:
        if self.conversation_id == self.session_id:
            return f"GoaicoreSession({self.session_id!r})"
        return f"GoaicoreSession({self.session_id!r}, conversation_id={self.conversation_id!r})"

    # -- the Session protocol

    async def get_items(self, limit: int | None = None) -> list[TResponseInputItem]:
        """The history's items, oldest first; the latest ``limit`` of them (None: the
        session settings' limit; negative: all)."""
        self._check_open()
        wanted = resolve_session_limit(limit, self.session_settings)
        messages = await self._run(self._messages())
        if wanted == 0:
            return []
        found = agent_items.history_items(messages)
        chosen = found if wanted is None or wanted < 0 else found[-wanted:]
        return chosen  # type: ignore[return-value]  # dicts in the SDK's item shapes

    async def add_items(self, items: list[TResponseInputItem]) -> None:
        """Append ``items`` together: all or none, in order, nothing between them. Every
        item is checked first (TypeError: one JSON cannot hold); repeating a call that
        failed, with the same items, adds none of them twice."""
        self._check_open()
        texts = tuple(agent_items.item_json(item) for item in items)
        if not texts:
            return
        bodies = agent_items.bodies(list(items))
        await self._run(self._add(texts, bodies), finish=True)

    async def pop_item(self) -> TResponseInputItem | None:
        """Take the most recent item out of the history and return it (None: empty)."""
        self._check_open()
        popped = await self._run(self._pop(), finish=True)
        return popped  # type: ignore[return-value]

    async def clear_session(self) -> None:
        """Make the history empty: a rewind in the log, which keeps every event."""
        self._check_open()
        await self._run(self._clear(), finish=True)

    async def run_compaction(self, args: Mapping[str, Any] | None = None) -> None:
        """The SDK's compaction hook, which its runner calls after a model response: the
        session's compactor (none: nothing happens) shortens the history with one
        ``CompactionApplied`` event, keeping whole tool steps and a reasoning item with
        its call; ``get_items`` then returns the shorter history and the log keeps every
        item. ``args`` (the response id, ``force``) ask about the Responses API's own
        compaction, which this does not call."""
        self._check_open()
        if self.compactor is not None:
            await self._run(self._compact(self.compactor), finish=True)

    # -- lifecycle

    def close(self) -> None:
        """Close the store this session opened (one it was given stays open); idempotent."""
        if self._closed.is_set():
            return
        self._closed.set()
        store, self._store = self._store, None
        if store is not None and self._owns_store:
            run_cleanup(store.close())

    async def aclose(self) -> None:
        """:meth:`close`, awaited."""
        if self._closed.is_set():
            return
        self._closed.set()
        store, self._store = self._store, None
        if store is not None and self._owns_store:
            await on_private_loop(store.close())

    # -- on the private loop

    async def _messages(self) -> tuple[SnapshotMessage, ...]:
        store = self._opened()
        found = await store.read(
            self.conversation_id, after=self._last, history=False, timeout=self.timeout
        )
        snapshot = found.snapshot
        return () if snapshot is None or snapshot.deleted else snapshot.messages

    async def _add(self, texts: tuple[str, ...], bodies: Sequence[agent_items.Body]) -> None:
        store = self._opened()
        unsure = self._unsure
        ids: tuple[str, ...] = ()
        if unsure is not None and unsure[0] == texts:  # a retry of the call that failed
            ids, self._unsure = unsure[1], None
        events = [
            new_event(self.conversation_id, body, source=SOURCE, event_id=ids[i] if ids else None)
            for i, body in enumerate(bodies)
        ]
        try:
            appended = await store.append_all(self.conversation_id, events)
        except BaseException:
            self._unsure = (texts, tuple(e.event_id for e in events))
            raise
        if self._unsure is unsure:  # no call failed meanwhile: the retry's moment has passed
            self._unsure = None
        self._wrote(appended[-1])

    async def _pop(self) -> dict[str, Any] | None:
        store = self._opened()
        messages = await self._messages()
        start = agent_items.tail(messages)
        if start < 0:
            return None
        suffix = agent_items.history_items(messages[start:])
        if not suffix:
            return None
        kept = [history_message(body, None) for body in agent_items.bodies(suffix[:-1])]
        rewound = await store.replace_tail(
            self.conversation_id,
            len(messages) - start,
            [message for message in kept if message is not None],
            expected_event_id=messages[-1].event_id,
            reason="pop_item",
        )
        self._wrote(Appended("", rewound.position))
        return suffix[-1]

    async def _compact(self, compactor: Compactor | RequestCompactor) -> None:
        store = self._opened()
        found = await store.read(
            self.conversation_id, after=self._last, history=False, timeout=self.timeout
        )
        snapshot = found.snapshot
        if snapshot is None or snapshot.deleted or not snapshot.messages:
            return
        request = CompactionRequest(tuple(to_chat_messages(snapshot.messages)), PROVIDER)
        answer = await compacted(compactor, request)
        if answer is None or answer[1] is None:
            return
        ids = snapshot.recent_event_ids
        body = to_compaction_applied(answer[1], basis_event_id=ids[-1] if ids else None)
        self._wrote(await store.append(self.conversation_id, body))

    async def _clear(self) -> None:
        store = self._opened()
        if not await self._messages():
            return
        rewound = await store.rewind(self.conversation_id, -1, reason="clear_session")
        self._wrote(Appended("", rewound.position))

    def _wrote(self, last: Appended) -> None:
        """Remember a write for reads to wait for: the furthest in the log, whichever of
        several concurrent calls ends last."""
        known = self._last
        if known is None or _behind(known.position, last.position):
            self._last = last

    def _opened(self) -> ConversationStore:
        store = self._store
        if store is None:
            self._check_open()
            from goaicore.store.kafka import KafkaConversationStore

            store = self._store = KafkaConversationStore(source=SOURCE)
        return store

    def _run(self, coro: Coroutine[Any, Any, T], finish: bool = False) -> Coroutine[Any, Any, T]:
        return on_private_loop(coro, finish=finish)

    def _check_open(self) -> None:
        if self._closed.is_set():
            raise RuntimeError(f"{self!r} is closed")


def _behind(known: TopicPosition, new: TopicPosition) -> bool:
    """Whether ``known`` is not past ``new`` in the log (in another topic or partition,
    which cannot be compared: the newer call's is taken)."""
    if (known.topic, known.partition) != (new.topic, new.partition):
        return True
    return known.offset <= new.offset
