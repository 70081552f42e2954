"""Run one chat request as a turn and say what to append to the log and what to reply.

``run_request`` never raises for anything a request or the LLM can cause: each
failure becomes a reply (``rejected``, ``timeout`` or ``error``) and a single
``TurnFailed`` event, and a failed turn appends nothing else, so no half turn
reaches the history. A successful turn appends its timeline (the user message,
assistant turns, tool results and compactions, in the order they happened).

Event ids of a turn are derived from its conversation id and request id, so a turn
appended twice (a redelivered request after a crash) is recognised by the fold as
duplicates and, before that, by :func:`goaicore.store.idempotency.recover_from_log`;
the same request id asked in another conversation is another turn, with other ids.
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field

from goaicore.conversation.chat import Chat
from goaicore.conversation.compaction import (
    EstimatedTokens,
    KeepLastExchanges,
    TokenBudget,
    TriggeredCompactor,
    to_compaction_applied,
)
from goaicore.conversation.compaction.record import CompactionRecord
from goaicore.conversation.errors import (
    ChatError,
    ContentFilteredError,
    ContextLengthError,
    InvalidHistoryError,
    ProviderError,
    ReplyTruncatedError,
    ToolLoopLimitError,
)
from goaicore.conversation.messages import Message as ChatMessage
from goaicore.conversation.pricing import PriceTable
from goaicore.conversation.progress import OnProgress
from goaicore.conversation.providers.base import CANCELLED, Completion, Provider
from goaicore.conversation.snapshot_messages import (
    UnreadableMessage,
    to_chat_messages,
    to_event_body,
)
from goaicore.conversation.tools import Tool
from goaicore.records import (
    AssistantTurn,
    ChatReply,
    ChatRequest,
    ConversationEvent,
    ConversationSnapshot,
    ReplyStatus,
    TurnFailed,
    Usage,
    new_event,
    utc_now,
)
from goaicore.records.types import EventBody
from goaicore.store.requests import (
    DeadlinePassed,
    RequestRejected,
    check_deadline,
    check_request,
    tools_for,
)
from goaicore.threads import ThreadPool

log = logging.getLogger(__name__)

SOURCE = "goaicore.store.chat"
MAX_TOOL_ITERATIONS = 10
_IDS = uuid.UUID("6d1c8f5e-3b0a-4f6e-9a51-0c2f7d9b8e41")


def turn_event_id(conversation_id: str, request_id: str, part: int | str) -> str:
    """The id of event ``part`` of the turn for ``request_id`` in ``conversation_id``
    (stable across retries; the conversation is its own namespace, so no separator in
    the ids can make two pairs one)."""
    return uuid.uuid5(uuid.uuid5(_IDS, conversation_id), f"{request_id}/{part}").hex


def request_only_event_id(request_id: str, part: int | str) -> str:
    """The id turns were given from the request id alone, as logs written before the
    conversation was part of it hold: a retry of such a turn still finds it."""
    return uuid.uuid5(_IDS, f"{request_id}/{part}").hex


@dataclass(frozen=True)
class TurnSettings:
    """What a turn needs besides the request: system prompt, limits, compaction budget."""

    system_prompt: str | None
    turn_timeout: float
    context_tokens: int
    max_tool_iterations: int = MAX_TOOL_ITERATIONS
    max_tool_result_bytes: int | None = None
    prices: PriceTable = field(default_factory=PriceTable)
    tool_pool: ThreadPool | None = None
    """Where synchronous tools run (None: the tools' own pool): apart from the history
    operations' folds and anything else blocking."""


@dataclass
class TurnOutcome:
    """The events to append (in order) and then the reply to publish.

    ``final``: the reply is the request's answer for good, stored for its retries. A
    request whose deadline passed before its turn ran is answered ``timeout`` but is not
    final: nothing of it is stored, so a retry with the same request id runs it.
    """

    reply: ChatReply
    events: list[ConversationEvent] = field(default_factory=list)
    final: bool = True

    @property
    def failed(self) -> bool:
        return self.reply.status != ReplyStatus.OK


def compactor_for(context_tokens: int) -> TriggeredCompactor:
    """Keep requests under ``context_tokens``: drop the oldest exchanges, say so in a note."""
    note = "Earlier messages of this conversation were removed to save space."
    return TriggeredCompactor(
        TokenBudget(context_tokens, note=note),
        EstimatedTokens(context_tokens),
        on_context_length=KeepLastExchanges(1, note=note),
    )


async def run_request(
    request: ChatRequest,
    snapshot: ConversationSnapshot | None,
    provider: Provider,
    registry: Mapping[str, Tool],
    settings: TurnSettings,
    on_progress: OnProgress | None = None,
    cancel: asyncio.Event | None = None,
) -> TurnOutcome:
    """Run ``request`` on the conversation's ``snapshot``; failures become replies.

    ``on_progress`` gets the turn's progress as it happens (a streamed request); setting
    ``cancel`` ends the turn with what it generated so far, recorded as a cancelled turn.
    """
    started = time.perf_counter()
    try:
        check_request(request, registry)
        check_deadline(request, utc_now())
        history = to_chat_messages(snapshot.messages if snapshot else ())
        timeout = _time_left(request, settings.turn_timeout)
        chat = Chat(
            provider,
            max_tool_iterations=settings.max_tool_iterations,
            compactor=compactor_for(settings.context_tokens),
            max_tool_result_bytes=settings.max_tool_result_bytes,
            tool_pool=settings.tool_pool,
        )
        system = request.system if request.system is not None else settings.system_prompt
        turn = await asyncio.wait_for(
            chat.arun_turn(
                history,
                user=request.text,
                system=system,
                tools=tools_for(request, registry),
                on_progress=on_progress,
                cancel=cancel,
            ),
            timeout,
        )
    except RequestRejected as err:
        return _failed(request, started, ReplyStatus.REJECTED, err.kind, str(err))
    except DeadlinePassed as err:
        late = _failed(request, started, ReplyStatus.TIMEOUT, "deadline", str(err), late=True)
        return TurnOutcome(late.reply, late.events, final=False)
    except TimeoutError:
        limit = _time_left(request, settings.turn_timeout)
        return _failed(
            request,
            started,
            ReplyStatus.TIMEOUT,
            "timeout",
            f"the turn did not finish in time (limit {limit:.1f} s: the request's deadline "
            "or GOAICORE_TURN_TIMEOUT)",
        )
    except UnreadableMessage as err:
        return _failed(request, started, ReplyStatus.ERROR, "unreadable-history", f"history: {err}")
    except ChatError as err:
        kind = _error_kind(err)
        return _failed(request, started, ReplyStatus.ERROR, kind, f"{kind}: {err}", err.usage)
    except Exception as err:  # a bug or an unexpected SDK error must not stop the worker
        log.exception("chat request %s failed unexpectedly", request.request_id)
        return _failed(
            request, started, ReplyStatus.ERROR, "internal", f"{type(err).__name__}: {err}"
        )
    last_event = snapshot.recent_event_ids[-1] if snapshot and snapshot.recent_event_ids else None
    events = _turn_events(request, turn.timeline, turn.completions, last_event, settings.prices)
    cancelled = turn.finish_reason == CANCELLED
    reply = ChatReply(
        request_id=request.request_id,
        conversation_id=request.conversation_id,
        status=ReplyStatus.CANCELLED if cancelled else ReplyStatus.OK,
        text=turn.text,
        usage=(turn.usage),
        latency_ms=_elapsed_ms(started),
    )
    return TurnOutcome(reply, events)


def _time_left(request: ChatRequest, turn_timeout: float) -> float:
    if request.deadline is None:
        return turn_timeout
    left = (request.deadline - utc_now()).total_seconds()
    return max(min(turn_timeout, left), 0.001)


def _turn_events(
    request: ChatRequest,
    timeline: tuple[ChatMessage | CompactionRecord, ...],
    completions: list[Completion],
    last_event: str | None,
    prices: PriceTable,
) -> list[ConversationEvent]:
    """The turn's timeline as events, with stable ids and the request as their cause."""
    by_message = {id(c.message): c for c in completions}
    events: list[ConversationEvent] = []
    for index, item in enumerate(timeline):
        body: EventBody
        if isinstance(item, CompactionRecord):
            body = to_compaction_applied(item, basis_event_id=last_event)
        else:
            body = to_event_body(item)
            completion = by_message.get(id(item))
            if isinstance(body, AssistantTurn) and completion is not None:
                body = _with_completion(body, completion, prices)
        event = new_event(
            request.conversation_id,
            body,
            source=SOURCE,
            causation_id=request.request_id,
            event_id=turn_event_id(request.conversation_id, request.request_id, index),
        )
        events.append(event)
        last_event = event.event_id
    return events


def _with_completion(
    body: AssistantTurn, completion: Completion, prices: PriceTable
) -> AssistantTurn:
    """The assistant turn with its call's usage, model and priced cost (None: no price)."""
    usage = completion.usage
    return AssistantTurn(
        text=body.text,
        tool_calls=body.tool_calls,
        finish_reason=completion.finish_reason,
        usage=usage,
        provider=body.provider,
        model=completion.model,
        raw_json=body.raw_json,
        cost_usd_nanos=prices.cost_nanos(
            body.provider,
            completion.model,
            usage.prompt_tokens,
            usage.completion_tokens,
            completion.cache_read_tokens,
            completion.cache_write_tokens,
        ),
    )


def _error_kind(err: ChatError) -> str:
    kinds: tuple[tuple[type[ChatError], str], ...] = (
        (ContextLengthError, "context-length"),
        (ProviderError, "provider"),
        (ToolLoopLimitError, "tool-loop-limit"),
        (ReplyTruncatedError, "truncated"),
        (ContentFilteredError, "content-filtered"),
        (InvalidHistoryError, "invalid-history"),
    )
    for cls, kind in kinds:
        if isinstance(err, cls):
            return kind
    return "chat-error"


def failure(
    request: ChatRequest,
    status: ReplyStatus,
    kind: str,
    message: str,
    usage: Usage | None = None,
    latency_ms: int = 0,
    late: bool = False,
) -> TurnOutcome:
    """A failed request: its reply and the one TurnFailed event that records it.

    A ``late`` request (its deadline passed before its turn ran) may be sent again with
    the same request id, so its TurnFailed is named by its deadline too: a retry's own
    failure is a new event, not a copy the fold drops; a redelivered record's is a copy.
    """
    reply = ChatReply(
        request_id=request.request_id,
        conversation_id=request.conversation_id,
        status=status,
        error=message,
        usage=usage,
        latency_ms=latency_ms,
    )
    event = new_event(
        request.conversation_id,
        TurnFailed(request_id=request.request_id, kind=kind, message=message[:2000]),
        source=SOURCE,
        causation_id=request.request_id,
        event_id=turn_event_id(
            request.conversation_id, request.request_id, _failed_part(request, late)
        ),
    )
    return TurnOutcome(reply, [event])


def _failed_part(request: ChatRequest, late: bool) -> str:
    if late and request.deadline is not None:
        return f"late/{request.deadline.isoformat()}"
    return "failed"


DELETED = "conversation-deleted"
"""The kind of a request refused because its conversation was deleted."""

ERASED = "reply-erased"
"""The kind of a request answered before its conversation was erased, asked again."""


def refused(request: ChatRequest, kind: str) -> TurnOutcome:
    """A request no turn runs for (``DELETED`` or ``ERASED``): a ``rejected`` reply
    saying why, and nothing to append (a deleted conversation takes no event but an
    erasure; an erased one's reply is gone with its content)."""
    log.info("chat request %s: refused (%s)", request.request_id, kind)
    reply = ChatReply(
        request_id=request.request_id,
        conversation_id=request.conversation_id,
        status=ReplyStatus.REJECTED,
        error=_refusal_message(kind, request.conversation_id, request.request_id),
    )
    return TurnOutcome(reply)


def _refusal_message(kind: str, conversation_id: str, request_id: str) -> str:
    if kind == DELETED:
        return f"conversation {conversation_id!r} was deleted: it takes no new turns"
    return (
        f"request {request_id!r} was answered before conversation {conversation_id!r} was "
        "erased: its reply was erased with the conversation's content"
    )


def refusal_of(reply: ChatReply) -> str | None:
    """``DELETED`` or ``ERASED`` when ``reply`` is that refusal (see :func:`refused`),
    else None: what an interface answers it with (HTTP 409 or 410)."""
    if reply.status is not ReplyStatus.REJECTED:
        return None
    for kind in (DELETED, ERASED):
        if reply.error == _refusal_message(kind, reply.conversation_id, reply.request_id):
            return kind
    return None


def _failed(
    request: ChatRequest,
    started: float,
    status: ReplyStatus,
    kind: str,
    message: str,
    usage: Usage | None = None,
    late: bool = False,
) -> TurnOutcome:
    log.info("chat request %s: %s (%s)", request.request_id, status.value, message)
    return failure(request, status, kind, message, usage, _elapsed_ms(started), late)


def _elapsed_ms(started: float) -> int:
    return int((time.perf_counter() - started) * 1000)
