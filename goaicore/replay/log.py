"""Replay a conversation from the log: its state as of any offset or time.

The records go through the fold's one loop, so a replay of the events a snapshot
applied equals that snapshot, field for field.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from goaicore.fold.policy import (
    DEFAULT_POLICY,
    FoldPolicy,
    PolicyTimeline,
    policy_for_record_limit,
)
from goaicore.fold.records import Rejected, fold_records
from goaicore.records import ConversationEvent, ConversationSnapshot, LogPosition
from goaicore.replay.reader import HistoryReader
from goaicore.settings import Settings


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
    policy: FoldPolicy | PolicyTimeline = DEFAULT_POLICY,
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
    for outcome in fold_records(records, policy, keep=keep, keys=reader.keys):
        if isinstance(outcome, Rejected):
            reader.skip(outcome.record, outcome.reason, outcome.detail)
            continue
        snapshot = outcome.snapshot
        applied.append((outcome.event, outcome.record.position))
    return Replay(snapshot, tuple(applied))


def replay_from_log(
    settings: Settings,
    conversation_id: str,
    until_offset: int | None = None,
    as_of: datetime | None = None,
) -> Replay:
    """:func:`replay` over the log these settings name, under the fold policy of their
    record limit (what ``goaicore replay`` runs)."""
    with HistoryReader(settings) as reader:
        policy = policy_for_record_limit(settings.max_record_bytes)
        return replay(reader, conversation_id, until_offset, as_of, policy)
