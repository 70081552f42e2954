"""Which tool calls of a history are still unanswered, remembered by identity.

The fold asks on nearly every event (a user message may not interrupt pending calls,
a game event is placed before their caller, a tool result must answer one). The
answer is read off the last assistant or user message and the tool results after it:
a history that grows by game events only (a game service's conversation) would be
scanned back to its start on every event. So the answer is remembered beside the
history (by identity: the same immutable tuple stays in a snapshot until the next
event), and carried to the next history when a message is appended at the end.
"""

from __future__ import annotations

from goaicore.records import SnapshotMessage

History = tuple[SnapshotMessage, ...]

_CACHED = 16384
# id(history) -> (history, index of its last assistant or user message or -1, the
# unanswered call ids of that message when it is an assistant's)
_known: dict[int, tuple[History, int, frozenset[str]]] = {}


def unanswered_calls(messages: History) -> frozenset[str]:
    """Tool call ids of the last assistant message not yet answered by a tool result
    (none once a user message follows it)."""
    return _state(messages)[1]


def pending_caller(messages: History) -> int | None:
    """Index of the assistant message whose tool calls are not all answered yet."""
    last, calls = _state(messages)
    return last if calls else None


def note_appended(placed: History, before: History, message: SnapshotMessage) -> None:
    """Record that ``placed`` is ``before`` with ``message`` at its end, when ``before``'s
    answer is known (``before`` is forgotten: the fold has moved on)."""
    hit = _known.pop(id(before), None)
    if hit is None or hit[0] is not before:
        return
    if len(placed) != len(before) + 1 or placed[-1] is not message:
        return  # inserted before a pending caller: the next question scans
    _, last, calls = hit
    if message.role == "assistant":
        last, calls = len(before), frozenset(call.id for call in message.tool_calls)
    elif message.role == "user":
        last, calls = len(before), frozenset()
    elif message.role == "tool" and calls:
        calls = calls - {message.tool_call_id}
    _remember(placed, last, calls)


def _state(messages: History) -> tuple[int, frozenset[str]]:
    hit = _known.get(id(messages))
    if hit is not None and hit[0] is messages:
        return hit[1], hit[2]
    last, calls = _scan(messages)
    _remember(messages, last, calls)
    return last, calls


def _scan(messages: History) -> tuple[int, frozenset[str]]:
    for index in range(len(messages) - 1, -1, -1):
        message = messages[index]
        if message.role == "assistant":
            if not message.tool_calls:
                return index, frozenset()
            answered = {m.tool_call_id for m in messages[index + 1 :] if m.role == "tool"}
            return index, frozenset(call.id for call in message.tool_calls) - answered
        if message.role == "user":
            return index, frozenset()
    return -1, frozenset()


def _remember(messages: History, last: int, calls: frozenset[str]) -> None:
    if len(_known) >= _CACHED:
        _known.clear()
    _known[id(messages)] = (messages, last, calls)


def note_dropped(after: History, before: History, cut: int) -> None:
    """Record that ``after`` is ``before`` without its oldest ``cut`` messages, when
    ``before``'s answer is known."""
    hit = _known.pop(id(before), None)
    if hit is None or hit[0] is not before or len(after) != len(before) - cut:
        return
    _, last, calls = hit
    if last < cut:  # the last assistant or user message left with the oldest
        _remember(after, -1, frozenset())
    else:
        _remember(after, last - cut, calls)
