"""Cut a record the worker writes down to the record limit, saying what was cut.

A client's own oversize record is refused with a clear error (it can send less);
a worker's record comes from an LLM reply or a tool result it does not control,
and must still be written. Its largest text is cut (provider-faithful JSON, which
cannot be cut and stay JSON, is dropped first: the text says what the model saw),
with a marker in the text, so whoever reads it next, the model included, knows.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from goaicore.errors import InputError
from goaicore.records import (
    AssistantTurn,
    ChatReply,
    ConversationEvent,
    EventBody,
    ToolCall,
)
from goaicore.records.avro.api import encode_chat_reply, encode_event
from goaicore.records.truncate import truncate_json_arguments, truncate_utf8, utf8_size

LIMIT_NOTE = "truncated to fit the record size limit"
_SLACK = 64  # bytes the encoding may differ by after a cut (length varints, the marker's digits)
_MAX_CUTS = 32


class RecordTooLargeError(InputError):
    """A record still over the limit with nothing left to cut (its ids alone are too large)."""


def fit_event(event: ConversationEvent, limit: int) -> tuple[ConversationEvent, list[str]]:
    """``event`` encoded in at most ``limit`` bytes, and the names of the fields cut."""
    cut: list[str] = []
    while (size := len(encode_event(event))) > limit:
        body, name = _shrink(event.body, size - limit + _SLACK)
        if name is None or len(cut) > _MAX_CUTS:
            raise RecordTooLargeError(
                f"event {event.event_id[:80]} is {size} bytes, over the {limit}-byte record "
                "limit, and has no text left to cut"
            )
        event = dataclasses.replace(event, body=body)
        cut.append(name)
    return event, cut


def fit_reply(reply: ChatReply, limit: int) -> tuple[ChatReply, list[str]]:
    """``reply`` encoded in at most ``limit`` bytes, and the names of the fields cut."""
    cut: list[str] = []
    while (size := len(encode_chat_reply(reply))) > limit:
        name = _largest(reply, ("text", "error"))
        if name is None:
            raise RecordTooLargeError(
                f"reply {reply.request_id[:80]} is {size} bytes, over the {limit}-byte limit"
            )
        value = getattr(reply, name)
        smaller = truncate_utf8(value, utf8_size(value) - (size - limit + _SLACK), LIMIT_NOTE)
        reply = dataclasses.replace(reply, **{name: smaller})  # type: ignore[arg-type]
        cut.append(name)
    return reply, cut


_DROPPABLE = ("raw_json", "content_json")
_TEXTS = ("text", "content", "summary", "message", "reason")


def _shrink(body: EventBody, excess: int) -> tuple[EventBody, str | None]:
    """``body`` less about ``excess`` bytes, and what was cut; None when nothing can be."""
    for extra in _DROPPABLE:
        if getattr(body, extra, None):
            return dataclasses.replace(body, **{extra: None}), extra  # type: ignore[arg-type]
    name = _largest(body, _TEXTS)
    calls = body.tool_calls if isinstance(body, AssistantTurn) else ()
    largest_call = max(calls, key=lambda c: utf8_size(c.arguments), default=None)
    if largest_call is not None and (
        name is None or utf8_size(largest_call.arguments) > utf8_size(getattr(body, name))
    ):
        shrunk = _shrunk_arguments(largest_call, excess)
        kept = tuple(shrunk if c is largest_call else c for c in calls)
        return dataclasses.replace(body, tool_calls=kept), "tool_calls.arguments"  # type: ignore[arg-type]
    if name is None:
        return body, None
    value = getattr(body, name)
    smaller = truncate_utf8(value, utf8_size(value) - excess, LIMIT_NOTE)
    return dataclasses.replace(body, **{name: smaller}), name  # type: ignore[arg-type]


def _largest(record: Any, names: tuple[str, ...]) -> str | None:
    """The name of ``record``'s largest non-empty text field among ``names``."""
    present = [n for n in names if isinstance(getattr(record, n, None), str) and getattr(record, n)]
    return max(present, key=lambda n: utf8_size(getattr(record, n)), default=None)


def _shrunk_arguments(call: ToolCall, excess: int) -> ToolCall:
    """``call`` with its arguments about ``excess`` bytes shorter, still a JSON object."""
    target = max(utf8_size(call.arguments) - excess, 0)
    return dataclasses.replace(call, arguments=truncate_json_arguments(call.arguments, target))
