"""``CompactionRecord`` <-> the ``CompactionApplied`` event body (the wire record).

One replacement travels in the v1 fields alone (``first_index``, ``last_index``,
``summary`` as its note), so readers of every release understand it. Several
replacements also fill ``replacements`` (v2), with ``first_index``/``last_index``
spanning them and ``summary`` null. Both directions are exact: a record survives the
round trip unchanged.
"""

from __future__ import annotations

from goaicore.conversation.compaction.record import CompactionRecord, Replacement
from goaicore.records.types import CompactedRange, CompactionApplied


def to_compaction_applied(
    record: CompactionRecord, *, basis_event_id: str | None = None
) -> CompactionApplied:
    """The event body that logs ``record``; ``basis_event_id`` is the last event applied
    to the history the compaction was computed from (the event side knows it)."""
    several = len(record.replacements) > 1
    return CompactionApplied(
        strategy=record.strategy,
        first_index=record.first_index,
        last_index=record.last_index,
        removed_count=record.removed_count,
        tokens_before=record.tokens_before,
        tokens_after=record.tokens_after,
        summary=None if several else record.replacements[0].note,
        basis_event_id=basis_event_id,
        replacements=tuple(
            CompactedRange(first_index=r.first_index, last_index=r.last_index, note=r.note)
            for r in record.replacements
        )
        if several
        else (),
        basis_message_count=record.message_count,
    )


def from_compaction_applied(body: CompactionApplied) -> CompactionRecord:
    """The record a ``CompactionApplied`` event describes (v1 or v2).

    Raises ``ValueError`` when the body's ranges are not valid (reversed, overlapping,
    unsorted), so a fold can log the event as an anomaly instead of guessing. A blank
    note or summary reads as none: the range is dropped.
    """
    if body.replacements:
        replacements = tuple(
            Replacement(r.first_index, r.last_index, _note(r.note)) for r in body.replacements
        )
    else:
        replacements = (Replacement(body.first_index, body.last_index, _note(body.summary)),)
    return CompactionRecord(
        strategy=body.strategy,
        replacements=replacements,
        message_count=body.basis_message_count,
        tokens_before=body.tokens_before,
        tokens_after=body.tokens_after,
    )


def _note(text: str | None) -> str | None:
    """A blank note (possible from other writers) drops its range, as null does."""
    return text if text is not None and text.strip() else None
