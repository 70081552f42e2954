"""Histories that events carry whole (a rewind's, a fork's): taken only when well formed.

Their writer folded them from the log, so they are histories the fold itself made; the
fold still checks what it is handed, as it checks a tool result against the pending
calls, so no event can put a history in a snapshot that is not valid to send: known
roles, each tool result answering a call of the assistant message before it, no
message between a call and its results, no call left unanswered at the end.
"""

from __future__ import annotations

from collections.abc import Sequence

from goaicore.records import SnapshotMessage

ROLES = frozenset({"system", "user", "assistant", "tool"})


def history_problem(messages: Sequence[SnapshotMessage]) -> str | None:
    """Why ``messages`` is not a history the fold could have made, or None."""
    unanswered: set[str] = set()
    for index, message in enumerate(messages):
        role = message.role
        if role not in ROLES:
            return f"message {index} has the unknown role {role[:40]!r}"
        if role == "tool":
            if message.tool_call_id not in unanswered:
                return f"message {index} is a tool result answering no pending call"
            unanswered.discard(message.tool_call_id)
            continue
        if unanswered:
            return f"message {index} ({role}) comes while tool calls are unanswered"
        if role == "assistant":
            unanswered = {call.id for call in message.tool_calls}
    if unanswered:
        return f"it ends with {len(unanswered)} tool call(s) unanswered"
    return None
