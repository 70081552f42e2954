"""The fold's bounds: how much a snapshot may hold, fixed per fold version.

Every number here is part of the fold's semantics: changing one changes what a
replay produces. Version 1 bounded the history in characters, which let a
snapshot outgrow the record limit; version 2 bounds the whole snapshot in
encoded bytes, derived from the record limit and recorded in the snapshot
(``max_bytes``), so a replay applies the bound the snapshot was folded under.
Version 3 cuts with headroom: past a bound, the history drops to 7/8 of it at
once, so a long conversation pays for a cut every few dozen messages instead of
on every event. Version 4 takes in no record of ``events`` over the record limit its
bound derives from (``record_limit``): a producer that is not goaicore's may write
one, and the store worker sets it aside as ``too-large``, as it does such a record of
``intake``. A snapshot also records the bounds of its earlier stretches
(``earlier_bounds``): a replay folds each stretch under its own.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

from goaicore.records import ConversationSnapshot, FoldBounds, LogPosition

FOLD_VERSION = 4

SNAPSHOT_MARGIN = 16 * 1024
"""Bytes of the record limit a snapshot leaves free (a safety margin under the limit)."""

MIN_SNAPSHOT_BYTES = 32 * 1024
"""The smallest snapshot bound: room for a few hundred minimal messages and the bookkeeping."""

DEFAULT_RECORD_LIMIT = 900_000
"""GOAICORE_MAX_RECORD_BYTES's default; the library's bound when nothing else is said."""


@dataclass(frozen=True)
class FoldPolicy:
    """Bounds that keep every snapshot's size finite whatever the conversation's length."""

    version: int = FOLD_VERSION
    """The fold semantics these bounds belong to (a snapshot's ``format_version``)."""
    max_bytes: int | None = DEFAULT_RECORD_LIMIT - SNAPSHOT_MARGIN
    """Largest encoded snapshot (version 2); the oldest whole exchanges leave first."""
    recent_ids: int = 128
    """event_ids remembered to spot re-published events."""
    max_anomalies: int = 32
    """anomaly notes kept (oldest dropped first)."""
    max_messages: int = 500
    """messages kept; beyond it, the oldest whole exchanges are dropped."""
    max_history_chars: int | None = None
    """Version 1's bound: characters of text, raw JSON and content kept across messages."""
    max_id_chars: int | None = 256
    """Longest event id applied (version 2): a longer one is an anomaly, never remembered."""

    def __post_init__(self) -> None:
        if self.version >= 2 and (self.max_bytes is None or self.max_bytes < MIN_SNAPSHOT_BYTES):
            raise ValueError(
                f"a snapshot bound of {self.max_bytes} bytes is below the {MIN_SNAPSHOT_BYTES} "
                "the fold needs"
            )

    @property
    def record_limit(self) -> int | None:
        """The largest record of ``events`` folded (version 4): the record limit the
        bound derives from (:func:`policy_for_record_limit`); None: any size."""
        if self.version < 4 or self.max_bytes is None:
            return None
        return self.max_bytes + SNAPSHOT_MARGIN

    @functools.cached_property
    def native_params(self) -> tuple[int, int, int, int, int | None] | None:
        """The bounds as the compiled fold takes them (``goaicore.fold.native``), made
        once per policy; None for version 1's, which it does not fold."""
        if self.max_bytes is None:
            return None
        return (self.version, self.max_bytes, self.recent_ids, self.max_messages, self.max_id_chars)

    @property
    def kept_eighths(self) -> int:
        """A cut keeps at most this many eighths of each bound it was over: 7 from
        version 3 on; 8 before, when a cut kept all that fitted, so a full history was
        cut again on every event."""
        return 7 if self.version >= 3 else 8


VERSION_1_POLICY = FoldPolicy(
    version=1, max_bytes=None, max_history_chars=2_000_000, max_id_chars=None
)
"""The bounds of fold version 1, kept so snapshots written under it still verify."""

MAX_EARLIER_BOUNDS = 16
"""Earlier stretches a snapshot remembers; a conversation whose bounds changed more
often replays its oldest stretches under the oldest bounds remembered."""


def policy_for_record_limit(record_limit: int) -> FoldPolicy:
    """The current fold's policy for records of at most ``record_limit`` encoded bytes."""
    return FoldPolicy(max_bytes=max(record_limit - SNAPSHOT_MARGIN, MIN_SNAPSHOT_BYTES))


def policy_of(snapshot: ConversationSnapshot | FoldBounds) -> FoldPolicy:
    """The policy ``snapshot`` (or a stretch of its log) was folded under last."""
    if snapshot.format_version <= 1:
        return VERSION_1_POLICY
    return FoldPolicy(version=snapshot.format_version, max_bytes=snapshot.max_bytes)


@dataclass(frozen=True)
class PolicyTimeline:
    """The policies a conversation was folded under, stretch by stretch: what a replay
    must apply, event by event, to reproduce its snapshot."""

    latest: FoldPolicy
    earlier: tuple[tuple[LogPosition, FoldPolicy], ...] = ()
    """Each earlier stretch's last position (inclusive) and policy, oldest first."""

    def at(self, position: LogPosition) -> FoldPolicy:
        """The policy the event at ``position`` was folded under."""
        for until, policy in self.earlier:
            if position.partition == until.partition and position.offset <= until.offset:
                return policy
        return self.latest


def timeline_of(snapshot: ConversationSnapshot) -> PolicyTimeline:
    """Every policy ``snapshot`` was folded under, for a replay that reproduces it."""
    earlier = tuple((bounds.until, policy_of(bounds)) for bounds in snapshot.earlier_bounds)
    return PolicyTimeline(policy_of(snapshot), earlier)


DEFAULT_POLICY = FoldPolicy()
