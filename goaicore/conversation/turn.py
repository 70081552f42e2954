"""One conversation turn: LLM calls and tool calls until the model answers.

The turn works on copies: the caller's history is only replaced by the returned one, so
a failure at any point (limit, finish reason, provider error, cancellation) leaves no
half turn anywhere.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
from collections.abc import Awaitable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TypeVar

from goaicore.conversation.compaction.asking import compacted
from goaicore.conversation.compaction.protocol import (
    CompactionReason,
    CompactionRequest,
    Compactor,
    RequestCompactor,
)
from goaicore.conversation.compaction.record import CompactionRecord
from goaicore.conversation.compaction.tokens import DEFAULT_COUNTER
from goaicore.conversation.errors import (
    ChatError,
    ContentFilteredError,
    ContextLengthError,
    ReplyTruncatedError,
    ToolLoopLimitError,
    UnknownFinishReasonError,
)
from goaicore.conversation.messages import Message, ToolCall
from goaicore.conversation.progress import (
    OnProgress,
    TextDelta,
    ToolCallFinished,
    ToolCallStarted,
)
from goaicore.conversation.providers.base import (
    CANCELLED,
    CONTENT_FILTER,
    CONTEXT_LENGTH,
    LENGTH,
    STOP,
    TOOL_CALLS,
    Completion,
    CompletionRequest,
    Provider,
    stream_or_complete,
)
from goaicore.conversation.tools import Tool, ToolOutcome
from goaicore.conversation.validation import validate_history
from goaicore.records.truncate import truncate_utf8, utf8_size
from goaicore.records.types import NO_USAGE, Usage
from goaicore.threads import ThreadPool

T = TypeVar("T")

log = logging.getLogger("goaicore.conversation.turn")

CANCELLED_TOOL_RESULT = "error: the turn was cancelled before this tool returned"


class _Cancelled(Exception):
    """The turn's ``cancel`` event was set while it waited on the LLM or its tools;
    ``sent``: the work had begun (an LLM call was made)."""

    def __init__(self, sent: bool) -> None:
        super().__init__()
        self.sent = sent


@dataclass
class TurnResult:
    """What a turn produced.

    ``messages`` is the whole history after the turn (compacted, if a compactor ran);
    ``new_messages`` are the messages this turn added, in order (user, assistant, tool
    results..., assistant): what an event log records. ``compactions`` counts the
    compactions of the turn; ``compaction_records`` holds the record of each one that has
    a record, and ``timeline`` the new messages and those records in the order they
    happened: an event log appends exactly these, in this order, so that a fold that
    replays each record with ``apply_compaction`` rebuilds ``messages``.
    """

    text: str
    messages: list[Message]
    new_messages: list[Message]
    usage: Usage
    finish_reason: str
    model: str
    compactions: int = 0
    completions: list[Completion] = field(default_factory=list, repr=False)
    compaction_records: tuple[CompactionRecord, ...] = ()
    timeline: tuple[Message | CompactionRecord, ...] = ()


async def run_turn(
    provider: Provider,
    history: Sequence[Message],
    incoming: Sequence[Message],
    *,
    system: tuple[str, ...],
    tools: Sequence[Tool],
    max_llm_calls: int,
    compactor: Compactor | RequestCompactor | None = None,
    max_tool_result_bytes: int | None = None,
    on_progress: OnProgress | None = None,
    cancel: asyncio.Event | None = None,
    tool_pool: ThreadPool | None = None,
) -> TurnResult:
    """Append ``incoming`` to ``history`` and call the LLM (and tools) until it answers.

    Synchronous tools run in ``tool_pool`` (default: the tools' own pool).

    ``on_progress`` gets the reply's text as it is generated (streamed where the provider
    can) and each tool call as it starts and finishes; the result is the same without it.
    Setting ``cancel`` stops the LLM call or the tools running: the turn ends with the
    finish reason ``cancelled``, keeping the text streamed so far (none where the call is
    not streamed) as its last assistant message (its tokens estimated) or an error
    result for each tool cut short, so the history stays valid to send.
    """
    by_name: dict[str, Tool] = {}
    for t in tools:
        if t.name in by_name:
            raise ValueError(f"two tools are named {t.name!r}")
        by_name[t.name] = t
    messages = [*history, *incoming]
    new = list(incoming)
    usage = NO_USAGE
    completions: list[Completion] = []
    compactions = 0
    records: list[CompactionRecord] = []
    timeline: list[Message | CompactionRecord] = list(incoming)
    reported: int | None = None  # prompt tokens of the latest call, as the provider said
    reported_count = 0  # how many messages that call sent
    heard: list[str] = []  # the text of the running call so far
    running_tools: tuple[ToolCall, ...] = ()

    def hear(text: str) -> None:
        heard.append(text)
        if on_progress is not None:
            on_progress(TextDelta(text))

    sink = hear if on_progress is not None else None  # only a streamed call has text so far

    def ended(text: str, finish_reason: str, model: str) -> TurnResult:
        return TurnResult(
            text=text,
            messages=messages,
            new_messages=new,
            usage=usage,
            finish_reason=finish_reason,
            model=model,
            compactions=compactions,
            completions=completions,
            compaction_records=tuple(records),
            timeline=tuple(timeline),
        )

    async def compact(reason: CompactionReason) -> bool:
        nonlocal messages, compactions
        if compactor is None:
            return False
        request = CompactionRequest(
            tuple(messages),
            provider.name,
            reason,
            system=system,
            tools=tuple(tools),
            reported_prompt_tokens=reported,
            reported_message_count=reported_count,
        )
        answer = await compacted(compactor, request)
        if answer is None:
            return False
        shorter, record = answer
        messages = shorter
        compactions += 1
        if record is not None:
            records.append(record)
            timeline.append(record)
        return True

    try:
        for call_number in range(1, max_llm_calls + 1):
            await compact("before_call")
            retried = False
            while True:  # one LLM call; compact and retry once if it does not fit
                validate_history(messages, provider.name)
                try:
                    request = CompletionRequest(system, list(messages), tools)
                    heard.clear()
                    completion = await _until(stream_or_complete(provider, request, sink), cancel)
                    break
                except ContextLengthError:
                    if retried or not await compact("context_length"):
                        raise
                    retried = True
            completions.append(completion)
            usage = usage + completion.usage
            reported, reported_count = completion.usage.prompt_tokens, len(messages)
            _check_finish(completion, provider.name)
            reply = completion.message
            messages.append(reply)
            new.append(reply)
            timeline.append(reply)
            if not reply.tool_calls:
                return ended(reply.text, completion.finish_reason, completion.model)
            if call_number == max_llm_calls:
                break
            if on_progress is not None:
                for call in reply.tool_calls:
                    on_progress(ToolCallStarted(call.id, call.name, call.arguments))
            running_tools = reply.tool_calls
            results = await _until(
                run_tool_calls(reply.tool_calls, by_name, max_tool_result_bytes, tool_pool),
                cancel,
            )
            running_tools = ()
            if on_progress is not None:
                for r in results:
                    on_progress(
                        ToolCallFinished(r.tool_call_id or "", r.name or "", r.text, r.is_error)
                    )
            messages.extend(results)
            new.extend(results)
            timeline.extend(results)
        raise ToolLoopLimitError(
            f"the turn needed more than max_tool_iterations={max_llm_calls} LLM calls",
            limit=max_llm_calls,
        )
    except _Cancelled as cancelled:
        text, spent = "", NO_USAGE
        if running_tools:  # each call the model made gets its answer, an error
            cut = [
                Message.tool_result(c.id, CANCELLED_TOOL_RESULT, name=c.name, is_error=True)
                for c in running_tools
            ]
            messages.extend(cut)
            new.extend(cut)
            timeline.extend(cut)
        elif cancelled.sent:  # the text streamed so far is the reply, its tokens estimated
            text = "".join(heard)
            spent = Usage.of_call(
                DEFAULT_COUNTER.count_request(request.messages, system=system, tools=tools),
                DEFAULT_COUNTER.count_text(text),
            )
        # The turn ends with an assistant message that says so (its finish reason), even
        # an empty one: the log tells a cancelled turn from a broken one.
        partial = Message(role="assistant", text=text, provider=provider.name)
        usage = usage + spent
        completions.append(Completion(partial, CANCELLED, CANCELLED, spent, provider.model))
        messages.append(partial)
        new.append(partial)
        timeline.append(partial)
        return ended(text, CANCELLED, provider.model)
    except ChatError as exc:
        if exc.usage is None:
            exc.usage = usage
        raise


async def _until(work: Awaitable[T], cancel: asyncio.Event | None) -> T:
    """``work``'s result, unless ``cancel`` is set first: then ``work`` is cancelled and
    :class:`_Cancelled` raised."""
    if cancel is None:
        return await work
    if cancel.is_set():
        if inspect.iscoroutine(work):
            work.close()
        raise _Cancelled(sent=False)
    task = asyncio.ensure_future(work)
    stop = asyncio.ensure_future(cancel.wait())
    try:
        await asyncio.wait((task, stop), return_when=asyncio.FIRST_COMPLETED)
        if task.done():  # finished first (or with the cancel): its result stands
            return task.result()
    finally:
        stop.cancel()
        if not task.done():
            task.cancel()
            await asyncio.wait((task,))  # a cancel of this turn itself still reaches it
    raise _Cancelled(sent=True)


def _check_finish(completion: Completion, provider: str) -> None:
    reason, raw = completion.finish_reason, completion.raw_finish_reason
    if reason in (STOP, TOOL_CALLS):
        return  # tool calls present with "stop" are run too: none is left unanswered
    if reason == LENGTH:
        raise ReplyTruncatedError(
            f"{provider}: the reply hit the output token limit ({raw})", finish_reason=reason
        )
    if reason == CONTENT_FILTER:
        raise ContentFilteredError(
            f"{provider}: the reply was withheld ({raw})", finish_reason=reason
        )
    if reason == CONTEXT_LENGTH:
        raise ContextLengthError(
            f"{provider}: the context window is full ({raw})", provider=provider
        )
    raise UnknownFinishReasonError(
        f"{provider}: unknown finish reason {raw!r}", finish_reason=str(raw)
    )


async def run_tool_calls(
    calls: Sequence[ToolCall],
    tools: Mapping[str, Tool],
    max_result_bytes: int | None = None,
    pool: ThreadPool | None = None,
) -> list[Message]:
    """Run one step's tool calls; results come back in call order.

    Async tools run concurrently; sync tools run one at a time in a thread of ``pool``
    (see :meth:`Tool.invoke`), since they were not written to run in parallel. A result
    over ``max_result_bytes`` is cut down with a marker before the model sees it, so the
    model knows it saw a part.
    """
    sync_lock = asyncio.Lock()

    async def run(call: ToolCall) -> Message:
        t = tools.get(call.name)
        if t is None:
            known = ", ".join(sorted(tools)) or "none"
            outcome = ToolOutcome(f"error: unknown tool {call.name!r} (tools: {known})", True)
        elif t.is_async:
            outcome = await t.invoke(call.arguments)
        else:
            async with sync_lock:
                outcome = await t.invoke(call.arguments, pool)
        text = outcome.text
        if max_result_bytes is not None and utf8_size(text) > max_result_bytes:
            log.warning(
                "tool %r returned %d bytes; the model sees the first %d",
                call.name,
                utf8_size(text),
                max_result_bytes,
            )
            text = truncate_utf8(text, max_result_bytes, "tool result truncated to fit the limit")
        return Message.tool_result(call.id, text, name=call.name, is_error=outcome.is_error)

    return list(await asyncio.gather(*(run(c) for c in calls)))
