"""Replay a conversation from the log, and check stored snapshots against replays.

Both use the one fold, so a snapshot the store worker wrote and a replay of the
same events up to its last position must be equal, field for field.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from datetime import datetime

from goaicore.fold.policy import DEFAULT_POLICY, FoldPolicy, policy_of
from goaicore.fold.records import Rejected, fold_records
from goaicore.records import ConversationEvent, ConversationSnapshot, LogPosition
from goaicore.replay.reader import HistoryReader


@dataclass(frozen=True)
class Replay:
    """A conversation's state as of a point, with the events that led there."""

    snapshot: ConversationSnapshot | None
    events: tuple[tuple[ConversationEvent, LogPosition], ...]


def replay(
    reader: HistoryReader,
    conversation_id: str,
    until_offset: int | None = None,
    as_of: datetime | None = None,
    policy: FoldPolicy = DEFAULT_POLICY,
) -> Replay:
    """Fold a conversation's events up to an offset (inclusive) or a time (inclusive).

    The records go through the worker's own loop (:func:`fold_records`): one it set
    aside as a dead letter is skipped here too, counted in ``reader.skipped``.
    """
    snapshot: ConversationSnapshot | None = None
    applied: list[tuple[ConversationEvent, LogPosition]] = []
    # occurred_at is the publisher's clock: not monotonic in the log, so filter, not stop.
    keep = None if as_of is None else (lambda event: event.occurred_at <= as_of)
    records = reader.records(conversation_id, until_offset=until_offset)
    for outcome in fold_records(records, policy, keep=keep):
        if isinstance(outcome, Rejected):
            reader.skip(outcome.record, outcome.reason, outcome.detail)
            continue
        snapshot = outcome.snapshot
        applied.append((outcome.event, outcome.record.position))
    return Replay(snapshot, tuple(applied))


@dataclass(frozen=True)
class Difference:
    """One field where a stored snapshot and the replay disagree."""

    conversation_id: str
    field: str
    stored: object
    replayed: object


def compare(
    conversation_id: str, stored: ConversationSnapshot | None, replayed: ConversationSnapshot | None
) -> list[Difference]:
    """Field-by-field differences between a stored snapshot and a replay."""
    if stored is None or replayed is None:
        if stored is replayed:
            return []
        return [Difference(conversation_id, "snapshot", stored is not None, replayed is not None)]
    out = []
    for item in dataclasses.fields(ConversationSnapshot):
        ours, theirs = getattr(stored, item.name), getattr(replayed, item.name)
        if ours != theirs:
            out.append(Difference(conversation_id, item.name, ours, theirs))
    return out


def verify_snapshot(reader: HistoryReader, stored: ConversationSnapshot) -> list[Difference]:
    """Replay ``stored``'s conversation up to its last position, under its bounds, and compare."""
    until = stored.last_position.offset if stored.last_position else -1
    replayed = replay(reader, stored.conversation_id, until, policy=policy_of(stored)).snapshot
    return compare(stored.conversation_id, stored, replayed)
