"""The fold's bounds: how much a snapshot may hold, fixed per fold version.

Every number here is part of the fold's semantics: changing one changes what a
replay produces, so it goes with a new ``FOLD_VERSION``.
"""

from __future__ import annotations

from dataclasses import dataclass

FOLD_VERSION = 1


@dataclass(frozen=True)
class FoldPolicy:
    """Bounds that keep every snapshot's size finite whatever the conversation's length."""

    recent_ids: int = 128
    """event_ids remembered to spot re-published events."""
    max_anomalies: int = 32
    """anomaly notes kept (oldest dropped first)."""
    max_messages: int = 500
    """messages kept; beyond it, the oldest whole exchanges are dropped."""
    max_history_chars: int = 2_000_000
    """characters of text, raw JSON and content kept across messages, same rule."""


DEFAULT_POLICY = FoldPolicy()
