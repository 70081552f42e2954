"""An Agents SDK session's items as goaicore events, and back: pure, no I/O.

A session holds Responses API input items. Each item is kept byte for byte as the raw
JSON of an event (its keys in their order), so ``get_items`` gives back what
``add_items`` was given, and every other reader of the log (replay, verify, the
console, compaction, another provider) reads the neutral view beside it:

- a message item from the user, the system or the developer: a ``UserMessage``;
- a run of the model's items (reasoning, messages, function calls, hosted tool calls,
  item types this library does not know): one ``AssistantTurn`` whose raw JSON is
  ``{"output": [items]}``, as the Responses provider keeps one call's output, so a
  reasoning item stays in one message with the function call it belongs to;
- each ``function_call_output`` answering the run just before it: a ``ToolResult``.

A run's function calls are neutral tool calls only when the items right after the run
answer every one of them, once each: then the history the fold makes is valid to send
to any provider. Otherwise (a call left for later, an output with no call before it)
the calls and the outputs stay raw items of one run, sent back verbatim to the
Responses API and shown as text to the others. Messages other writers put in the
conversation (chat turns, game events, another provider's turns) read back as the
Responses provider renders them.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping, Sequence
from typing import Any

from goaicore.conversation.messages import text_of_parts
from goaicore.conversation.providers import responses
from goaicore.conversation.snapshot_messages import to_chat_message
from goaicore.errors import InputError
from goaicore.records import AssistantTurn, SnapshotMessage, ToolCall, ToolResult, UserMessage

log = logging.getLogger(__name__)

PROVIDER = responses.NAME
"""Whose format the raw JSON of a session's events is in: the Responses API's."""

Item = dict[str, Any]
Body = UserMessage | AssistantTurn | ToolResult

_INPUT_ROLES = frozenset({"user", "system", "developer"})


def item_json(item: object) -> str:
    """``item`` as the JSON text stored for it (TypeError: not a JSON object)."""
    if not isinstance(item, dict):
        raise TypeError(f"a session item is a JSON object (a dict), not {type(item).__name__}")
    return _json(item)


def _json(value: object) -> str:
    """JSON text a record can hold (TypeError for what JSON cannot)."""
    text = json.dumps(value, ensure_ascii=False)
    try:
        text.encode()
    except UnicodeEncodeError:  # a lone surrogate: escaped, it is the same value
        text = json.dumps(value)
    return text


def bodies(items: Sequence[object]) -> list[Body]:
    """The event bodies that keep ``items``, in order (see the module docstring); every
    item is checked before any body is made (TypeError: an item JSON cannot hold)."""
    texts = [item_json(item) for item in items]
    kept: list[Item] = list(items)  # type: ignore[arg-type]  # dicts: item_json checked
    out: list[Body] = []
    start = 0
    while start < len(kept):
        if _is_input_message(kept[start]):
            out.append(_user_message(kept[start], texts[start]))
            start += 1
            continue
        end_run = start
        while end_run < len(kept) and _is_model_item(kept[end_run]):
            end_run += 1
        end = end_run
        while end < len(kept) and _is_output(kept[end]):
            end += 1
        out.extend(_turn(kept[start:end_run], kept[end_run:end], texts[end_run:end]))
        start = end
    return out


def items_of(message: SnapshotMessage) -> list[Item]:
    """The items of one message of a conversation's history (InputError: unreadable)."""
    if message.raw_json is not None and message.provider == PROVIDER:
        try:
            raw = json.loads(message.raw_json)
        except ValueError as err:
            raise InputError(f"message {message.event_id}: {err}") from err
        if message.role != "assistant":
            return [raw]
        output = raw.get("output") if isinstance(raw, dict) else None
        if isinstance(output, list) and all(isinstance(item, dict) for item in output):
            return output
        raise InputError(f"message {message.event_id}: its raw JSON holds no output items")
    return responses.render([to_chat_message(message)])


def history_items(messages: Sequence[SnapshotMessage]) -> list[Item]:
    """Every item of a history, oldest first; a message that cannot be read is logged
    and left out (one damaged message does not hide the rest)."""
    out: list[Item] = []
    for message in messages:
        try:
            out.extend(items_of(message))
        except InputError as err:
            log.warning("session history: skipped an unreadable message: %s", err)
    return out


def tail(messages: Sequence[SnapshotMessage]) -> int:
    """Where the suffix of a history starts that removing its last item rewrites: the
    last message, or, for a tool result, the run whose call it answers (without the
    result, that run's calls become raw items)."""
    last = len(messages) - 1
    if last < 0 or messages[last].role != "tool":
        return last
    answered = messages[last].tool_call_id
    for index in range(last - 1, -1, -1):
        if any(call.id == answered for call in messages[index].tool_calls):
            return index
    return last


# -- one run


def _turn(run: list[Item], outputs: list[Item], output_texts: list[str]) -> list[Body]:
    """A run of the model's items and the outputs right after it."""
    calls = [_call(item) for item in run if item.get("type") == "function_call"]
    answers = [item.get("call_id") for item in outputs]
    ids = [call.id for call in calls if call is not None]
    answered = (
        bool(calls)
        and len(ids) == len(calls)
        and len(set(ids)) == len(ids)
        and sorted(ids) == sorted(a for a in answers if isinstance(a, str))
        and len(answers) == len(ids)
    )
    if not answered:  # everything stays raw items of one turn
        return [_assistant_turn([*run, *outputs], ())]
    names = {call.id: call.name for call in calls if call is not None}
    results: list[Body] = [
        _tool_result(item, text, names) for item, text in zip(outputs, output_texts, strict=True)
    ]
    neutral = tuple(call for call in calls if call is not None)
    return [_assistant_turn(run, neutral), *results]


def _assistant_turn(items: list[Item], calls: tuple[ToolCall, ...]) -> AssistantTurn:
    return AssistantTurn(
        text="".join(_message_text(item) for item in items),
        tool_calls=calls,
        provider=PROVIDER,
        raw_json=_json({"output": items}),
    )


def _user_message(item: Item, text: str) -> UserMessage:
    return UserMessage(text=_content_text(item.get("content")), raw_json=text, provider=PROVIDER)


def _tool_result(item: Item, text: str, names: Mapping[str, str]) -> ToolResult:
    call_id = str(item.get("call_id"))
    return ToolResult(
        tool_call_id=call_id,
        name=names.get(call_id, ""),
        content=_content_text(item.get("output")),
        raw_json=text,
        provider=PROVIDER,
    )


def _call(item: Item) -> ToolCall | None:
    """A function call item as a neutral tool call (None: not one the others can read)."""
    call_id, name, arguments = item.get("call_id"), item.get("name"), item.get("arguments", "")
    if not (isinstance(call_id, str) and call_id and isinstance(name, str)):
        return None
    if not isinstance(arguments, str):
        return None
    return ToolCall(id=_clean(call_id), name=_clean(name), arguments=_clean(arguments))


# -- the neutral view


def _is_input_message(item: Item) -> bool:
    role = item.get("role")  # any JSON value: a list's not hashable, so not looked up
    return (
        isinstance(role, str) and role in _INPUT_ROLES and item.get("type", "message") == "message"
    )


def _is_output(item: Item) -> bool:
    return item.get("type") == "function_call_output"


def _is_model_item(item: Item) -> bool:
    return not _is_input_message(item) and not _is_output(item)


def _message_text(item: Item) -> str:
    if item.get("role") != "assistant" or item.get("type", "message") != "message":
        return ""
    return _content_text(item.get("content"))


def _content_text(content: object) -> str:
    """The plain text of a message's content or a tool's output."""
    if isinstance(content, str):
        return _clean(content)
    if isinstance(content, list):
        return _clean(text_of_parts([p for p in content if isinstance(p, dict)]))
    if content is None:
        return ""
    return _clean(json.dumps(content, ensure_ascii=False, default=str))


def _clean(text: str) -> str:
    """``text`` a record can hold (a lone surrogate becomes U+FFFD; the raw item keeps it)."""
    return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
