"""LLM summarisation: the oldest part of a conversation becomes one summary note.

The summary is written by a provider of its own (usually a cheaper model than the one
that chats) and takes the place of the summarised messages as a context message, so
later turns see it first. Summaries roll: the next summarisation folds the previous
summary and the messages since into a new one, so the history holds one summary at most.
The summary text lives in the compaction record, so a replay never calls an LLM.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from goaicore.conversation.compaction.exchanges import user_positions
from goaicore.conversation.compaction.protocol import CompactionRequest
from goaicore.conversation.compaction.record import Replacement
from goaicore.conversation.compaction.strategies import Plan, PlanResult
from goaicore.conversation.compaction.tokens import TokenCounter
from goaicore.conversation.errors import ChatError
from goaicore.conversation.messages import Message
from goaicore.conversation.providers.base import CompletionRequest, Provider

log = logging.getLogger("goaicore.conversation.compaction")

SUMMARY_PREFIX = "Summary of the earlier conversation: "
DEFAULT_INSTRUCTIONS = (
    "You summarise conversations between a user and an assistant so that the assistant "
    "can continue them. Keep facts, names, numbers, decisions, open questions and what "
    "tools returned; drop pleasantries. Write plain prose in the third person, at most "
    "{max_words} words. Reply with the summary only."
)


def is_summary(message: Message) -> bool:
    """Whether ``message`` is a summary note written by ``Summarize``."""
    return message.role == "system" and message.text.startswith(SUMMARY_PREFIX)


def transcript(messages: Sequence[Message], *, max_chars: int = 2000) -> str:
    """A plain-text transcript for the summariser, one line per message."""
    lines: list[str] = []
    for m in messages:
        text = " ".join(m.text.split())
        if len(text) > max_chars:
            text = text[: max_chars - 1] + "…"
        if m.role == "user":
            lines.append(f"User: {text}")
        elif m.role == "system":
            lines.append(f"Context: {text}")
        elif m.role == "tool":
            status = "failed" if m.is_error else "returned"
            lines.append(f"Tool {m.name or m.tool_call_id} {status}: {text}")
        else:
            if text:
                lines.append(f"Assistant: {text}")
            for call in m.tool_calls:
                lines.append(f"Assistant called {call.name}({call.arguments[:max_chars]})")
    return "\n".join(lines)


class Summarize:
    """Summarise everything before the last ``keep_last`` exchanges with ``provider``.

    ``provider`` is any ``Provider`` (e.g. ``OpenAIProvider("gpt-4o-mini")``); its model
    writes the summary. A failed or empty summary call is logged and the strategy does
    not apply (a ``Composite`` then tries the next strategy), so compaction never fails
    a turn because the summariser did.
    """

    name = "summarize"

    def __init__(
        self,
        provider: Provider,
        *,
        keep_last: int = 2,
        max_words: int = 200,
        instructions: str = DEFAULT_INSTRUCTIONS,
        max_chars_per_message: int = 2000,
    ) -> None:
        if keep_last < 1:
            raise ValueError("Summarize keeps at least the latest exchange")
        self.provider = provider
        self.keep_last = keep_last
        self.max_words = max_words
        self.instructions = instructions
        self.max_chars_per_message = max_chars_per_message

    def prompt(self, previous: str | None, messages: Sequence[Message]) -> str:
        """The user message sent to the summariser."""
        parts = []
        if previous:
            parts.append(
                "The summary so far:\n"
                + previous
                + "\n\nFold it and the messages below into one new summary."
            )
        else:
            parts.append("Summarise the messages below.")
        parts.append("Messages:\n" + transcript(messages, max_chars=self.max_chars_per_message))
        return "\n\n".join(parts)

    async def plan(self, request: CompactionRequest, counter: TokenCounter) -> PlanResult:
        messages = request.messages
        starts = user_positions(messages)
        if len(starts) <= self.keep_last:
            return None
        cut = starts[-self.keep_last]
        previous = (
            messages[0].text.removeprefix(SUMMARY_PREFIX) if is_summary(messages[0]) else None
        )
        fresh = messages[1 if previous is not None else 0 : cut]
        if not fresh:
            return None
        call = CompletionRequest(
            system=(self.instructions.format(max_words=self.max_words),),
            messages=[Message.user(self.prompt(previous, fresh))],
        )
        try:
            completion = await self.provider.complete(call)
        except ChatError as exc:
            log.warning(
                "summarisation failed, not compacting this way: %s",
                exc,
                extra={"goaicore_event": "summary_failed"},
            )
            return None
        summary = " ".join(completion.message.text.split())
        if not summary:
            log.warning(
                "the summariser returned no text", extra={"goaicore_event": "summary_empty"}
            )
            return None
        replacement = Replacement(0, cut - 1, SUMMARY_PREFIX + summary)
        return Plan(self.name, (replacement,), usage=completion.usage)

    def __repr__(self) -> str:
        return f"Summarize({self.provider.name}:{self.provider.model}, keep_last={self.keep_last})"
