"""A conversation as of any point of its log: the stored events up to there, folded
with the worker's own fold (``refold``), under the stored snapshot's bounds.

The point is an event's position, the last event that occurred by a time, or the
position just before a model call: what the history held when that call was made.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from goaicore.fold.policy import DEFAULT_POLICY, timeline_of
from goaicore.projection.queries import EventPoint as Point
from goaicore.projection.queries import ProjectionQueries
from goaicore.records import ConversationSnapshot


@dataclass(frozen=True)
class AsOf:
    conversation_id: str
    points: list[Point]
    """Every event of the conversation, in log order (the points to move to)."""
    at: Point | None
    """The last event applied; None before the first one."""
    snapshot: ConversationSnapshot | None
    before_call: Point | None = None
    """Set when this is the history just before the model call at that point."""

    @property
    def index(self) -> int:
        """How many of ``points`` are applied."""
        return 0 if self.at is None else self.points.index(self.at) + 1


def as_of(
    queries: ProjectionQueries,
    conversation_id: str,
    offset: int | None = None,
    time: datetime | None = None,
    before: int | None = None,
) -> AsOf:
    """The snapshot after the events up to ``offset`` (or those that occurred by ``time``,
    or those before ``before``); with none given, after every stored event."""
    points = queries.event_points(conversation_id)
    if before is not None:
        applied = [p for p in points if p.offset < before]
        call = next((p for p in points if p.offset == before), None)
    elif offset is not None:
        applied, call = [p for p in points if p.offset <= offset], None
    elif time is not None:
        last = max((i for i, p in enumerate(points) if p.occurred_at <= time), default=-1)
        applied, call = points[: last + 1], None
    else:
        applied, call = points, None
    at = applied[-1] if applied else None
    snapshot = None
    if at is not None:
        stored = queries.stored_snapshots([conversation_id]).get(conversation_id)
        policy = timeline_of(stored) if stored is not None else DEFAULT_POLICY
        snapshot = queries.refold(conversation_id, at.partition, at.offset, policy)
    return AsOf(conversation_id, points, at, snapshot, call)
