"""Idempotency by request id: a repeated request gets the stored reply, never a new turn.

Two stores, each for the case the other cannot cover:

- the **recent replies** of each conversation (:class:`RecentReplies`), failures
  included. The store worker keeps them in a table keyed by conversation id
  (changelog ``<app id>-replies-changelog``), with the conversation's partition,
  so the worker that owns a conversation, or takes it over, has its replies
  locally after recovery, and a lookup costs no I/O;
- the **log** itself: a turn's events carry ids derived from the conversation and
  request ids (:func:`~goaicore.store.turns.turn_event_id`; a turn logged before the
  conversation was part of them is found by its request-only ids too),
  so after a crash between appending a turn and storing its reply, the
  redelivered request finds its own turn in the snapshot and answers from it
  (:func:`recover_from_log`) instead of calling the LLM again.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass

from goaicore.conversation.progress import OnProgress
from goaicore.conversation.providers.base import Provider
from goaicore.conversation.tools import Tool
from goaicore.records import (
    ChatReply,
    ChatRequest,
    ConversationEvent,
    ConversationRewound,
    ConversationSnapshot,
    ReplyStatus,
    SnapshotMessage,
    ToolResult,
    new_event,
)
from goaicore.records.avro.api import decode_chat_reply, encode_chat_reply
from goaicore.records.validation import InvalidInputError
from goaicore.store import history
from goaicore.store.errors import ConversationNotFound, OperationRefused
from goaicore.store.turns import (
    DELETED,
    ERASED,
    SOURCE,
    TurnOutcome,
    TurnSettings,
    failure,
    refused,
    request_only_event_id,
    run_request,
    turn_event_id,
)

log = logging.getLogger(__name__)

# Replies kept per conversation. Every turn writes them all to the changelog again,
# so each one kept costs every later turn: 256 replies of 1 KB were 345 KiB and
# 1.2 ms of CPU a turn, 32 are 43 KiB and 0.17 ms. A retry comes seconds after its
# request, not dozens of requests later; an older one whose turn is still in the
# history is answered from the log (recover_from_log; a failed turn runs again).
KEEP_REPLIES = 32

Regeneration = Callable[[], Awaitable[tuple[ConversationRewound, str]]]
"""The rewind a regenerate's turn is appended after, and the text it asks again, read
from the conversation's log as the turn starts (:func:`goaicore.store.history.
regeneration`)."""


@dataclass(frozen=True)
class RecentReplies:
    """The latest replies of one conversation, oldest first, as Avro ChatReply bytes."""

    entries: tuple[tuple[str, bytes], ...] = ()

    def get(self, request_id: str) -> ChatReply | None:
        for rid, payload in reversed(self.entries):
            if rid == request_id:
                return decode_chat_reply(payload)
        return None

    def with_reply(self, reply: ChatReply, max_bytes: int) -> RecentReplies:
        """These replies and ``reply``, the oldest leaving first past KEEP_REPLIES or
        ``max_bytes`` of the table's record (each reply is base64 in JSON: 4/3 larger)."""
        kept = [(r, p) for r, p in self.entries if r != reply.request_id]
        kept.append((reply.request_id, encode_chat_reply(reply)))
        kept = kept[-KEEP_REPLIES:]
        size = sum(_stored_size(r, p) for r, p in kept)
        while len(kept) > 1 and size > max_bytes:
            size -= _stored_size(*kept.pop(0))
        return RecentReplies(tuple(kept))


def _stored_size(request_id: str, payload: bytes) -> int:
    """Bytes one entry takes in the codec's JSON: the id, the base64 reply, the quoting."""
    return len(request_id.encode()) + 4 * ((len(payload) + 2) // 3) + 8


async def answer(
    request: ChatRequest,
    snapshot: ConversationSnapshot | None,
    provider_for: Callable[[str | None], Provider],
    registry: Mapping[str, Tool],
    settings: TurnSettings,
    on_progress: OnProgress | None = None,
    cancel: asyncio.Event | None = None,
    regeneration: Regeneration | None = None,
) -> TurnOutcome:
    """What to append and reply for ``request``: its turn as the log already holds it
    (after a crash, :func:`~goaicore.store.idempotency.recover_from_log`), else a new
    turn with the provider of the model it asks for (one that cannot be made is an
    ``error`` reply), its progress to ``on_progress``, stopped by ``cancel``.

    A deleted conversation takes no turn: the request is refused before any LLM call,
    and nothing is appended (the fold would drop it as an anomaly). A regenerate's turn
    runs on the history its ``regeneration`` leaves (see :func:`_regenerated`)."""
    if snapshot is not None and snapshot.deleted:
        return refused(request, DELETED)
    recovered = recover_from_log(request, snapshot)
    if recovered is not None:
        log.warning("request %s: its turn is already in the log", request.request_id)
        return recovered
    try:
        provider = provider_for(request.model)
    except Exception as err:
        return failure(
            request, ReplyStatus.ERROR, "provider-config", f"{type(err).__name__}: {err}"
        )
    if request.regenerate:
        return await _regenerated(
            request, snapshot, provider, registry, settings, on_progress, cancel, regeneration
        )
    return await run_request(request, snapshot, provider, registry, settings, on_progress, cancel)


async def _regenerated(
    request: ChatRequest,
    snapshot: ConversationSnapshot | None,
    provider: Provider,
    registry: Mapping[str, Tool],
    settings: TurnSettings,
    on_progress: OnProgress | None,
    cancel: asyncio.Event | None,
    regeneration: Regeneration | None,
) -> TurnOutcome:
    """A regenerate's turn: run on the history with the last exchange undone, its events
    after the rewind that undoes it, so they land together (one record batch where they
    fit). A turn that fails appends its TurnFailed alone: no rewind without the turn
    that replaces what it undid. The rewind's id derives from the request id: one that
    landed before a worker stopped is not decided again."""
    rewind_id = turn_event_id(request.conversation_id, request.request_id, "rewind")
    if snapshot is not None and rewind_id in snapshot.recent_event_ids:
        return await run_request(
            request, snapshot, provider, registry, settings, on_progress, cancel
        )
    if snapshot is None or regeneration is None:
        return failure(
            request,
            ReplyStatus.REJECTED,
            "nothing-to-regenerate",
            f"nothing to regenerate: {request.conversation_id!r} has no events",
        )
    try:
        body, text = await regeneration()
    except (OperationRefused, ConversationNotFound, InvalidInputError) as err:
        return failure(request, ReplyStatus.REJECTED, "nothing-to-regenerate", str(err))
    rewind = new_event(
        request.conversation_id,
        body,
        source=history.SOURCE,
        causation_id=request.request_id,
        event_id=rewind_id,
    )
    then = dataclasses.replace(
        snapshot,
        messages=body.messages,
        summary=body.summary,
        recent_event_ids=(*snapshot.recent_event_ids, rewind_id),
    )
    asked = dataclasses.replace(request, text=text)
    outcome = await run_request(asked, then, provider, registry, settings, on_progress, cancel)
    if outcome.reply.status in (ReplyStatus.OK, ReplyStatus.CANCELLED):
        outcome.events.insert(0, rewind)
    return outcome


def recover_from_log(
    request: ChatRequest, snapshot: ConversationSnapshot | None
) -> TurnOutcome | None:
    """The outcome of a turn already appended for ``request``, or None when there is none.

    A complete turn gives its reply again, from the log; a turn whose conversation
    was erased since is refused (``ERASED``: its reply went with the content). A turn
    cut short (the
    worker stopped while appending it) is closed: error results answer its
    unanswered tool calls, so the history stays valid to send, a TurnFailed
    records it, and the reply says to ask again.
    """
    if snapshot is None:
        return None

    def current(part: int | str) -> str:
        return turn_event_id(request.conversation_id, request.request_id, part)

    def earlier(part: int | str) -> str:
        return request_only_event_id(request.request_id, part)

    seen = {m.event_id for m in snapshot.messages} | set(snapshot.recent_event_ids)
    event_id = current if current(0) in seen or earlier(0) not in seen else earlier
    first = event_id(0)
    messages = snapshot.messages
    start = next((i for i, m in enumerate(messages) if m.event_id == first), None)
    if start is None:
        if first not in snapshot.recent_event_ids:
            return None
        if snapshot.erased_before is not None:
            return refused(request, ERASED)
        return failure(
            request,
            ReplyStatus.ERROR,
            "reply-unavailable",
            "this request was answered before, but its turn is no longer in the history",
        )
    # A turn has at most one event per message after its start, plus its compactions.
    span = range(len(messages) - start + 32)
    ids = {event_id(i) for i in span}
    turn = [m for m in messages[start:] if m.event_id in ids]
    unanswered = _unanswered(turn)
    last = turn[-1]
    if last.role == "assistant" and not last.tool_calls and not unanswered:
        reply = ChatReply(
            request_id=request.request_id,
            conversation_id=request.conversation_id,
            status=ReplyStatus.OK,
            text=last.text,
        )
        return TurnOutcome(reply)
    closing = [_interrupted_result(request, call_id, name) for call_id, name in unanswered]
    outcome = failure(
        request,
        ReplyStatus.ERROR,
        "interrupted",
        "the worker stopped while this turn was being appended; the turn was closed, ask again",
    )
    outcome.events[:0] = closing
    return outcome


def _unanswered(turn: Iterable[SnapshotMessage]) -> list[tuple[str, str]]:
    calls: dict[str, str] = {}
    for message in turn:
        for call in message.tool_calls:
            calls[call.id] = call.name
        if message.role == "tool" and message.tool_call_id is not None:
            calls.pop(message.tool_call_id, None)
    return list(calls.items())


def _interrupted_result(request: ChatRequest, call_id: str, name: str) -> ConversationEvent:
    return new_event(
        request.conversation_id,
        ToolResult(
            tool_call_id=call_id,
            name=name,
            content="error: the turn was interrupted before this tool ran",
            is_error=True,
        ),
        source=SOURCE,
        causation_id=request.request_id,
        event_id=turn_event_id(
            request.conversation_id, request.request_id, f"interrupted/{call_id}"
        ),
    )
