"""The size policy: keep a snapshot inside its bounds after each event.

The oldest whole exchanges leave first; the newest message never does. A cut
is made only where a history may start (a user or context message, never
between a tool call and its results), so what is left is still valid to send.
From fold version 3 a cut leaves room: the history drops to 7/8 of the bound it
was over, so a long conversation is not cut again on every event. When the
newest exchange alone is over the byte bound, its largest messages are cut
down, each with a marker the model and the reader see. The log keeps
everything: the snapshot counts what left and says up to which position.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence

from goaicore.fold import pending
from goaicore.fold.evolve import evolve
from goaicore.fold.policy import FoldPolicy
from goaicore.fold.size import (
    bookkeeping_bytes,
    message_bytes,
    messages_bytes,
    note_dropped,
    note_window_slid,
    string_bytes,
    tool_call_bytes,
)
from goaicore.records import ConversationSnapshot, LogPosition, SnapshotMessage, ToolCall
from goaicore.records.truncate import truncate_json_arguments, truncate_utf8

NOTE_ROOM = 512
"""Bytes kept free for the anomaly note the policy adds about itself."""
_LENGTH = 5
"""The length varint in front of a string's bytes."""
SUMMARY_SHARE = 8
"""The latest compaction summary, kept beside the history, takes at most 1/8 of the bound."""


def bounded(
    snapshot: ConversationSnapshot,
    policy: FoldPolicy,
    where: Callable[[], str],
    position: LogPosition,
) -> ConversationSnapshot:
    """``snapshot`` within ``policy``'s bounds, with a note (starting with ``where()``, made
    only then) when anything was cut."""
    if policy.max_bytes is None:
        return _bounded_in_chars(snapshot, policy, where)
    notes = []
    summary = snapshot.summary
    if summary is not None and string_bytes(summary) > policy.max_bytes // SUMMARY_SHARE:
        notes.append("size policy truncated the summary")
        snapshot = evolve(
            snapshot, summary=_truncated_text(summary, policy.max_bytes // SUMMARY_SHARE, None)
        )
    messages = snapshot.messages
    budget = policy.max_bytes - bookkeeping_bytes(snapshot) - NOTE_ROOM
    over = len(messages) > policy.max_messages or messages_bytes(messages) > budget
    if not over and not notes:
        return snapshot
    cut = 0
    if over or policy.version < 3:  # version 2 cut an exchange for a long summary alone
        eighths = policy.kept_eighths
        cut = _first_fitting_cut(
            messages, policy.max_messages * eighths // 8, budget * eighths // 8
        )
    if cut:
        notes.append(f"size policy dropped the oldest {cut} messages")
        kept = messages[cut:]
        note_dropped(kept, messages, messages[:cut])
        pending.note_dropped(kept, messages, cut)
        snapshot = evolve(
            snapshot,
            messages=kept,
            dropped_messages=snapshot.dropped_messages + cut,
            dropped_before=position,
        )
    kept, truncated = _truncated_to_fit(snapshot.messages, budget)
    if truncated:
        notes.append(
            f"size policy truncated {truncated} message(s) to fit {policy.max_bytes} bytes"
        )
        snapshot = evolve(
            snapshot, messages=kept, truncated_messages=snapshot.truncated_messages + truncated
        )
    if not notes:
        return snapshot
    return with_anomaly(snapshot, f"{where()}: {'; '.join(notes)}", policy)


def _first_fitting_cut(messages: Sequence[SnapshotMessage], max_messages: int, budget: int) -> int:
    """The smallest cut leaving at most ``max_messages`` within ``budget``, else the last one.

    A cut may fall where a history may start (a user or context message, never the
    first). The cuts are tried from the oldest, so the usual cut (the oldest exchange)
    costs the size of what it drops, not of the whole history.
    """
    total = messages_bytes(messages)
    dropped = 0
    last = 0
    for index in range(1, len(messages)):
        dropped += message_bytes(messages[index - 1])
        if messages[index].role in ("user", "system"):
            last = index
            if len(messages) - index <= max_messages and total - dropped <= budget:
                return index
    return last


def _truncated_to_fit(
    messages: tuple[SnapshotMessage, ...], budget: int
) -> tuple[tuple[SnapshotMessage, ...], int]:
    """Cut the largest messages down, one at a time, until all fit ``budget``."""
    total = messages_bytes(messages)
    if total <= budget:
        return messages, 0
    kept = list(messages)
    order = sorted(range(len(kept)), key=lambda i: message_bytes(kept[i]), reverse=True)
    truncated = 0
    for index in order:
        if total <= budget:
            break
        before = message_bytes(kept[index])
        allowance = max(before - (total - budget), 0)
        kept[index] = truncate_message(kept[index], allowance)
        total += message_bytes(kept[index]) - before
        truncated += 1
    return tuple(kept), truncated


_BOUND = "truncated to fit the snapshot size bound"


def truncate_message(message: SnapshotMessage, allowance: int) -> SnapshotMessage:
    """``message`` cut down to about ``allowance`` encoded bytes, with a visible marker.

    The provider-faithful extras (raw JSON, structured content) go first: the text
    says what the model saw. Then the text keeps its beginning, and oversized tool
    call arguments become a JSON object holding their beginning, so every provider
    still accepts the call.
    """
    slim = dataclasses.replace(message, raw_json=None, content_json=None)
    fixed = message_bytes(dataclasses.replace(slim, text="", tool_calls=()))
    room = max(allowance - fixed, 0)
    calls_room = room // 2 if slim.tool_calls else 0
    calls = _truncated_calls(slim.tool_calls, calls_room)
    calls_used = sum(map(tool_call_bytes, calls))
    text = _truncated_text(slim.text, room - calls_used, message.event_id)
    return dataclasses.replace(slim, text=text, tool_calls=calls)


def _truncated_text(text: str, room: int, event_id: str | None) -> str:
    where = f"; the full message is event {event_id} in the log" if event_id else ""
    return truncate_utf8(text, max(room - _LENGTH, 0), _BOUND, where)


def _truncated_calls(calls: tuple[ToolCall, ...], room: int) -> tuple[ToolCall, ...]:
    if not calls:
        return calls
    share = max(room // len(calls) - _LENGTH, 0)
    return tuple(
        dataclasses.replace(c, arguments=truncate_json_arguments(c.arguments, share)) for c in calls
    )


def _bounded_in_chars(
    snapshot: ConversationSnapshot, policy: FoldPolicy, where: Callable[[], str]
) -> ConversationSnapshot:
    """Fold version 1's rule: whole exchanges from user messages, bounded in characters."""
    limit = policy.max_history_chars
    messages = snapshot.messages

    def fits(rest: Sequence[SnapshotMessage]) -> bool:
        return len(rest) <= policy.max_messages and (limit is None or _chars(rest) <= limit)

    if fits(messages):
        return snapshot
    starts = [i for i, m in enumerate(messages) if m.role == "user" and i > 0]
    cut = 0
    for start in starts:
        cut = start
        if fits(messages[start:]):
            break
    if cut == 0:
        return snapshot  # one exchange larger than the bounds: kept whole, never split
    note = f"{where()}: size policy dropped the oldest {cut} messages"
    return with_anomaly(evolve(snapshot, messages=messages[cut:]), note, policy)


def _chars(messages: Sequence[SnapshotMessage]) -> int:
    return sum(len(m.text) + len(m.raw_json or "") + len(m.content_json or "") for m in messages)


def with_anomaly(
    snapshot: ConversationSnapshot, note: str, policy: FoldPolicy
) -> ConversationSnapshot:
    """``snapshot`` with ``note`` added to its bounded list of anomalies."""
    return evolve(snapshot, anomalies=anomalies_with(snapshot, note, policy))


def anomalies_with(
    snapshot: ConversationSnapshot, note: str, policy: FoldPolicy
) -> tuple[str, ...]:
    """``snapshot``'s anomalies with ``note`` added, the oldest beyond the bound dropped."""
    anomalies = (*snapshot.anomalies, note)[-policy.max_anomalies :]
    note_window_slid(anomalies, snapshot.anomalies)
    return anomalies
