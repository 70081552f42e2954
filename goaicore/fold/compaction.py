"""Replaying a CompactionApplied event on a snapshot's messages.

The same rules as the conversation library (``goaicore.conversation.compaction``): each
listed range of the history, as it stood when the compaction was computed, is
dropped or replaced by one context message holding its note (a summary). So the
stream processor, the replay tool, the verifier and ``Chat`` reach the same history.
"""

from __future__ import annotations

from collections.abc import Sequence

from goaicore.conversation.compaction.record import CompactionMismatchError, replay_compaction
from goaicore.conversation.compaction.wire import from_compaction_applied
from goaicore.records import CompactionApplied, SnapshotMessage

CompactionMismatch = CompactionMismatchError


def apply_compaction_record(
    messages: Sequence[SnapshotMessage], body: CompactionApplied
) -> tuple[SnapshotMessage, ...]:
    """The history after ``body``; CompactionMismatch when it does not fit the history."""
    try:
        record = from_compaction_applied(body)
    except ValueError as err:
        raise CompactionMismatchError(f"unreadable compaction record: {err}") from err
    first = min((r.first_index for r in record.replacements), default=0)
    if first < 0:
        raise CompactionMismatchError(f"negative index {first}")
    kept = replay_compaction(
        messages, record, lambda text: SnapshotMessage(role="system", text=text)
    )
    return tuple(kept)
