"""Any conversation store from synchronous code: each call runs the store's coroutine on
goaicore's private event loop (:mod:`goaicore.sync`) and blocks until it is done.

The command line and ``HistoryOperations`` use it, so synchronous callers get the
asyncio store's behaviour, written once, not a twin of it.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from datetime import datetime

from goaicore.lifecycle import Closing
from goaicore.records import ChatReply, ConversationEvent, SnapshotMessage, TopicPosition
from goaicore.records.types import EventBody
from goaicore.store.history import Erased, Forked, Rewound, Undone
from goaicore.store.port import Appended, Conversation, ConversationStore
from goaicore.store.reply_streams import StreamedReply
from goaicore.sync import blocking_iter, run_sync


class SyncConversationStore(Closing):
    """``store``'s use cases, each a blocking call with the same arguments and errors
    (see :class:`~goaicore.store.port.ConversationStore`); closing closes the store."""

    def __init__(self, store: ConversationStore) -> None:
        self.store = store

    def read(
        self,
        conversation_id: str,
        *,
        after: Appended | None = None,
        history: bool = True,
        snapshot: bool = True,
        timeout: float = 10.0,
    ) -> Conversation:
        return run_sync(
            self.store.read(
                conversation_id, after=after, history=history, snapshot=snapshot, timeout=timeout
            )
        )

    def append(self, conversation_id: str, event: ConversationEvent | EventBody) -> Appended:
        return run_sync(self.store.append(conversation_id, event))

    def append_all(
        self, conversation_id: str, events: Iterable[ConversationEvent | EventBody]
    ) -> list[Appended]:
        """Append several events of the conversation together, in order (see
        :meth:`~goaicore.store.port.ConversationStore.append_all`)."""
        return run_sync(self.store.append_all(conversation_id, events))

    def ask(
        self,
        conversation_id: str,
        text: str,
        *,
        system: str | None = None,
        tools: Iterable[str] = (),
        model: str | None = None,
        request_id: str | None = None,
        timeout: float = 30.0,
    ) -> ChatReply:
        return run_sync(
            self.store.ask(
                conversation_id,
                text,
                system=system,
                tools=tools,
                model=model,
                request_id=request_id,
                timeout=timeout,
            )
        )

    def ask_stream(
        self,
        conversation_id: str,
        text: str,
        *,
        system: str | None = None,
        tools: Iterable[str] = (),
        model: str | None = None,
        request_id: str | None = None,
        timeout: float = 30.0,
    ) -> Iterator[StreamedReply]:
        """Each item of the streamed ask as it comes (the input checked now)."""
        items = self.store.ask_stream(
            conversation_id,
            text,
            system=system,
            tools=tools,
            model=model,
            request_id=request_id,
            timeout=timeout,
        )
        return blocking_iter(items, owner=self)

    def cancel(self, conversation_id: str, request_id: str) -> None:
        run_sync(self.store.cancel(conversation_id, request_id))

    def undo(self, conversation_id: str, ask_again: bool = False) -> Undone:
        """Rewind to just before the last user message still in the history (the events
        after it, game events included, leave the history with it). ``ask_again``:
        refuse, before anything is appended, a message a chat request cannot carry again
        (multimodal content)."""
        return run_sync(self.store.undo(conversation_id, ask_again))

    def rewind(self, conversation_id: str, until_offset: int, reason: str = "rewind") -> Rewound:
        """Make the history what it was after the event at ``until_offset`` (-1: empty)."""
        return run_sync(self.store.rewind(conversation_id, until_offset, reason))

    def replace_tail(
        self,
        conversation_id: str,
        count: int,
        messages: Sequence[SnapshotMessage],
        *,
        expected_event_id: str | None = None,
        reason: str = "replace",
    ) -> Rewound:
        """Replace the history's last ``count`` messages with ``messages``, as one event
        (see :meth:`~goaicore.store.port.ConversationStore.replace_tail`)."""
        return run_sync(
            self.store.replace_tail(
                conversation_id,
                count,
                messages,
                expected_event_id=expected_event_id,
                reason=reason,
            )
        )

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
        return run_sync(self.store.fork(source_id, new_id, before_offset, as_of))

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
        return run_sync(self.store.set_metadata(conversation_id, title, owner, tags, attributes))

    def delete(self, conversation_id: str, reason: str = "") -> TopicPosition:
        """Delete the conversation: its history and metadata leave the snapshot (the log
        keeps its events), and the fold takes nothing after it. Refused for a conversation
        without events or already deleted."""
        return run_sync(self.store.delete(conversation_id, reason))

    def erase(
        self,
        conversation_id: str,
        reason: str = "",
        timeout: float = 30.0,
        name_forks: bool = True,
    ) -> Erased:
        """Erase the conversation's content, keeping its audit skeleton.

        Appends :class:`~goaicore.records.ConversationErased`: the fold clears the
        history, summary, notes and metadata, and the worker that owns the conversation
        destroys its data key (a tombstone on the keys topic), so every sealed copy of its
        content can no longer be opened; ids, types, times, token counts and costs stay.
        Returns once the key's tombstone is on the broker (waiting at most ``timeout``
        seconds for the worker). Refused for a conversation without events; erasing
        again, or a deleted conversation, is allowed. ``name_forks`` reads every snapshot
        to name the forks (and their forks) that keep a copy of the history.
        """
        return run_sync(self.store.erase(conversation_id, reason, timeout, name_forks))

    def conversations(self) -> list[str]:
        return run_sync(self.store.conversations())

    def close(self) -> None:
        run_sync(self.store.close())
