"""The fold's bounds: how much a snapshot may hold, fixed per fold version.

Every number here is part of the fold's semantics: changing one changes what a
replay produces. Version 1 bounded the history in characters, which let a
snapshot outgrow the record limit; version 2 bounds the whole snapshot in
encoded bytes, derived from the record limit and recorded in the snapshot
(``max_bytes``), so a replay applies the bound the snapshot was folded under.
"""

from __future__ import annotations

from dataclasses import dataclass

from goaicore.records import ConversationSnapshot

FOLD_VERSION = 2

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
        if self.version == 2 and (self.max_bytes is None or self.max_bytes < MIN_SNAPSHOT_BYTES):
            raise ValueError(
                f"a snapshot bound of {self.max_bytes} bytes is below the {MIN_SNAPSHOT_BYTES} "
                "the fold needs"
            )


VERSION_1_POLICY = FoldPolicy(
    version=1, max_bytes=None, max_history_chars=2_000_000, max_id_chars=None
)
"""The bounds of fold version 1, kept so snapshots written under it still verify."""


def policy_for_record_limit(record_limit: int) -> FoldPolicy:
    """The current fold's policy for records of at most ``record_limit`` encoded bytes."""
    return FoldPolicy(max_bytes=max(record_limit - SNAPSHOT_MARGIN, MIN_SNAPSHOT_BYTES))


def policy_of(snapshot: ConversationSnapshot) -> FoldPolicy:
    """The policy ``snapshot`` was folded under: what a replay must use to reproduce it."""
    if snapshot.format_version <= 1:
        return VERSION_1_POLICY
    return FoldPolicy(version=snapshot.format_version, max_bytes=snapshot.max_bytes)


DEFAULT_POLICY = FoldPolicy()
