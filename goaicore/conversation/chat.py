"""``Chat``: conversations over an opaque state blob, with tools, on any provider.

An application stores the ``bytes`` returned in ``ChatResult.state`` wherever it keeps
its data and passes them back on the next turn; it never needs to look inside. Every
call has an async twin (``a``-prefixed); the sync calls run the async ones on a private
event loop (see ``goaicore.sync``), so they work from plain scripts.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from goaicore.conversation.compaction.strategies import Strategy
from goaicore.conversation.compaction.triggered import AnyCompactor, as_compactor
from goaicore.conversation.errors import (
    ChatError,
    ContentFilteredError,
    ContextLengthError,
    FinishReasonError,
    InvalidHistoryError,
    ProviderError,
    ReplyTruncatedError,
    ToolLoopLimitError,
    UnknownFinishReasonError,
)
from goaicore.conversation.messages import Message
from goaicore.conversation.progress import (
    OnProgress,
    TextDelta,
    ToolCallFinished,
    ToolCallStarted,
    TurnProgress,
)
from goaicore.conversation.providers.base import Provider
from goaicore.conversation.state import (
    DEFAULT_GZIP_THRESHOLD,
    DecodedState,
    MismatchPolicy,
    decode_state,
    encode_state,
)
from goaicore.conversation.tools import Tool, tool
from goaicore.conversation.turn import TurnResult, run_turn
from goaicore.sync import blocking_iter, run_sync
from goaicore.threads import ThreadPool

__all__ = [
    "Chat",
    "ChatError",
    "ChatResult",
    "ContentFilteredError",
    "ContextLengthError",
    "FinishReasonError",
    "InvalidHistoryError",
    "ProviderError",
    "ReplyTruncatedError",
    "StreamItem",
    "TextDelta",
    "ToolCallFinished",
    "ToolCallStarted",
    "ToolLoopLimitError",
    "TurnProgress",
    "TurnResult",
    "UnknownFinishReasonError",
]

State = bytes | None
Texts = str | Sequence[str]
UserInput = str | Message | Sequence[str | Message]
ToolInput = Sequence[Tool | Callable[..., Any]]


@dataclass
class ChatResult(TurnResult):
    """A turn's result with the new opaque ``state`` to store.

    ``state_reset`` names why the given state could not be used and the conversation
    started fresh (``None`` when it was used); the reason is also logged.
    """

    state: bytes = b""
    state_reset: str | None = None


StreamItem = TurnProgress | ChatResult
"""What a streamed turn yields: its progress as it happens, then one ``ChatResult``."""


class Chat:
    """Conversations on one provider.

    ``max_tool_iterations`` is the most LLM calls one turn may make; ``compactor`` (see
    ``goaicore.conversation.compaction.protocol``) may shorten the history before each
    call, ``None`` never does: a strategy alone (asked before every call), a
    ``TriggeredCompactor``, or anything with ``compact`` or ``compact_request``; anything
    else is a ``TypeError`` here. ``on_provider_mismatch`` decides what happens to a state
    written with another provider: ``"reset"`` starts fresh, ``"convert"`` keeps the
    neutral history.
    ``gzip_threshold`` is the JSON size above which states are compressed.
    ``max_tool_result_bytes`` cuts a larger tool result down (with a marker the model
    sees) before it enters the history; ``None`` keeps results whole.
    ``tool_pool`` runs the synchronous tools (default: the tools' own pool,
    :data:`goaicore.threads.tools_pool`, apart from asyncio's default one).
    """

    def __init__(
        self,
        provider: Provider,
        *,
        max_tool_iterations: int = 10,
        compactor: AnyCompactor | Strategy | None = None,
        on_provider_mismatch: MismatchPolicy = "reset",
        gzip_threshold: int | None = DEFAULT_GZIP_THRESHOLD,
        max_tool_result_bytes: int | None = None,
        tool_pool: ThreadPool | None = None,
    ) -> None:
        if max_tool_iterations < 1:
            raise ValueError("max_tool_iterations must be at least 1")
        if on_provider_mismatch not in ("reset", "convert"):
            raise ValueError("on_provider_mismatch must be 'reset' or 'convert'")
        self.provider = provider
        self.max_tool_iterations = max_tool_iterations
        self.compactor = as_compactor(compactor)
        self.on_provider_mismatch: MismatchPolicy = on_provider_mismatch
        self.gzip_threshold = gzip_threshold
        if max_tool_result_bytes is not None and max_tool_result_bytes < 256:
            raise ValueError("max_tool_result_bytes must be at least 256")
        self.max_tool_result_bytes = max_tool_result_bytes
        self.tool_pool = tool_pool

    # ---- state --------------------------------------------------------------------

    def read_state(self, state: State) -> DecodedState:
        """The history in ``state`` (or a fresh one, with the reason); never raises."""
        return decode_state(
            state, self.provider.name, on_provider_mismatch=self.on_provider_mismatch
        )

    def write_state(self, messages: Sequence[Message]) -> bytes:
        """The state bytes for a history."""
        return encode_state(messages, self.provider.name, gzip_threshold=self.gzip_threshold)

    async def aappend_to_state(self, state: State, text: Texts) -> bytes:
        """Store context (a game event, a note) without calling the LLM."""
        return self.append_to_state(state, text)

    def append_to_state(self, state: State, text: Texts) -> bytes:
        """Store context (a game event, a note) without calling the LLM.

        Works on an empty state too; the model sees the context on the next turn.
        """
        contexts = [Message.context(t) for t in _texts(text, "text")]
        if not contexts:
            raise ValueError("append_to_state needs a non-empty text")
        return self.write_state([*self.read_state(state).messages, *contexts])

    # ---- turns --------------------------------------------------------------------

    async def arun_turn(
        self,
        messages: Sequence[Message],
        *,
        user: UserInput,
        system: Texts | None = None,
        tools: ToolInput = (),
        on_progress: OnProgress | None = None,
        cancel: asyncio.Event | None = None,
    ) -> TurnResult:
        """Run one turn on a history held by the caller (no state blob involved).

        ``on_progress`` gets the reply's text as it is generated and each tool call as it
        starts and finishes (see ``goaicore.conversation.progress``); it must not block.
        Setting ``cancel`` stops the turn where it is: the result's ``finish_reason`` is
        ``cancelled`` and its history keeps the text generated so far (valid to send).
        """
        return await run_turn(
            self.provider,
            messages,
            _user_messages(user),
            system=tuple(_texts(system, "system")),
            tools=[t if isinstance(t, Tool) else tool(t) for t in tools],
            max_llm_calls=self.max_tool_iterations,
            compactor=self.compactor,
            max_tool_result_bytes=self.max_tool_result_bytes,
            on_progress=on_progress,
            cancel=cancel,
            tool_pool=self.tool_pool,
        )

    async def achat_with_state(
        self,
        state: State,
        *,
        user: UserInput,
        system: Texts | None = None,
        tools: ToolInput = (),
        on_progress: OnProgress | None = None,
        cancel: asyncio.Event | None = None,
    ) -> ChatResult:
        """Run one turn on ``state``; the result carries the reply and the new state.

        ``system`` prompts are sent first on every call and never stored. An unusable
        ``state`` starts a fresh conversation (``result.state_reset`` says why) and the
        new message is still answered. On a ``ChatError`` nothing changes: keep the
        previous state.
        """
        decoded = self.read_state(state)
        turn = await self.arun_turn(
            decoded.messages,
            user=user,
            system=system,
            tools=tools,
            on_progress=on_progress,
            cancel=cancel,
        )
        return ChatResult(
            text=turn.text,
            messages=turn.messages,
            new_messages=turn.new_messages,
            usage=turn.usage,
            finish_reason=turn.finish_reason,
            model=turn.model,
            compactions=turn.compactions,
            completions=turn.completions,
            compaction_records=turn.compaction_records,
            timeline=turn.timeline,
            state=self.write_state(turn.messages),
            state_reset=decoded.reset_reason,
        )

    async def astream_with_state(
        self,
        state: State,
        *,
        user: UserInput,
        system: Texts | None = None,
        tools: ToolInput = (),
        cancel: asyncio.Event | None = None,
    ) -> AsyncIterator[StreamItem]:
        """``achat_with_state``, streamed: yields ``TextDelta``s and tool calls as they
        happen, then the ``ChatResult`` (reply, usage, new state), the same as
        ``achat_with_state`` returns for the same LLM responses.

        A ``ChatError`` is raised after the progress that came before it. Leaving the
        iteration early abandons the turn (keep the previous state); setting ``cancel``
        ends it with what was generated so far, in the final result.
        """
        items: asyncio.Queue[TurnProgress | None] = asyncio.Queue()

        async def run() -> ChatResult:
            try:
                return await self.achat_with_state(
                    state,
                    user=user,
                    system=system,
                    tools=tools,
                    on_progress=items.put_nowait,
                    cancel=cancel,
                )
            finally:
                items.put_nowait(None)

        task = asyncio.create_task(run())
        try:
            while (item := await items.get()) is not None:
                yield item
            yield await task
        finally:
            if not task.done():
                task.cancel()
                await asyncio.wait((task,))  # a cancel of the caller still reaches it

    async def achat(
        self, *, user: UserInput, system: Texts | None = None, tools: ToolInput = ()
    ) -> str:
        """A one-off turn with no history; returns the reply text."""
        return (await self.arun_turn([], user=user, system=system, tools=tools)).text

    # ---- sync twins ---------------------------------------------------------------

    def run_turn(
        self,
        messages: Sequence[Message],
        *,
        user: UserInput,
        system: Texts | None = None,
        tools: ToolInput = (),
    ) -> TurnResult:
        """Sync twin of ``arun_turn``."""
        return run_sync(self.arun_turn(messages, user=user, system=system, tools=tools))

    def chat_with_state(
        self,
        state: State,
        *,
        user: UserInput,
        system: Texts | None = None,
        tools: ToolInput = (),
    ) -> ChatResult:
        """Sync twin of ``achat_with_state``."""
        return run_sync(self.achat_with_state(state, user=user, system=system, tools=tools))

    def stream_with_state(
        self,
        state: State,
        *,
        user: UserInput,
        system: Texts | None = None,
        tools: ToolInput = (),
    ) -> Iterator[StreamItem]:
        """Sync twin of ``astream_with_state``: each item as soon as it happens."""
        return blocking_iter(
            self.astream_with_state(state, user=user, system=system, tools=tools), owner=self
        )

    def chat(self, *, user: UserInput, system: Texts | None = None, tools: ToolInput = ()) -> str:
        """Sync twin of ``achat``."""
        return run_sync(self.achat(user=user, system=system, tools=tools))


def _texts(value: Texts | None, what: str) -> list[str]:
    """A string or a sequence of strings as a list, without empty strings."""
    if value is None:
        return []
    items = [value] if isinstance(value, str) else list(value)
    for item in items:
        if not isinstance(item, str):
            raise TypeError(f"{what} must be a string or a sequence of strings")
    return [item for item in items if item.strip()]


def _user_messages(user: UserInput) -> list[Message]:
    items: list[str | Message] = [user] if isinstance(user, str | Message) else list(user)
    messages: list[Message] = []
    for item in items:
        if isinstance(item, str):
            item = Message.user(item)
        if not isinstance(item, Message) or item.role != "user":
            raise TypeError("user must be text, a user Message or a sequence of them")
        if item.text.strip() or (isinstance(item.content, list) and item.content):
            messages.append(item)
    if not messages:
        raise ValueError("the user message is empty")
    return messages
