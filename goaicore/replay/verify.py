"""Check stored snapshots against replays of the events they applied.

A snapshot the store worker wrote and a fold of the same events up to its last
position must be equal, field for field; a report lists every field that is not.
The log is one source of events (here), the PostgreSQL projection another
(``goaicore.projection.verify``): both fill the same report.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field

from goaicore.fold.policy import policy_of
from goaicore.records import ConversationSnapshot
from goaicore.replay.log import replay
from goaicore.replay.reader import HistoryReader


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


@dataclass
class VerifyReport:
    """What a verify found: how many snapshots it checked and how they differ."""

    checked: int = 0
    differences: list[Difference] = field(default_factory=list)
    pending: list[str] = field(default_factory=list)
    """Conversations whose snapshot has applied events the source has not got yet."""
    unknown: list[str] = field(default_factory=list)
    """Conversations named that have no events at all."""

    @property
    def different(self) -> set[str]:
        return {d.conversation_id for d in self.differences}

    @property
    def equal(self) -> int:
        return self.checked - len(self.different) - len(self.pending)


def verify_snapshot(reader: HistoryReader, stored: ConversationSnapshot) -> list[Difference]:
    """Replay ``stored``'s conversation up to its last position, under its bounds, and compare."""
    until = stored.last_position.offset if stored.last_position else -1
    replayed = replay(reader, stored.conversation_id, until, policy=policy_of(stored)).snapshot
    return compare(stored.conversation_id, stored, replayed)


def verify_log(
    reader: HistoryReader,
    stored: Mapping[str, ConversationSnapshot],
    conversation_ids: Iterable[str] = (),
    progress: Callable[[], None] = lambda: None,
) -> VerifyReport:
    """Verify the stored snapshots (those named, or all) against replays of the log."""
    report = VerifyReport()
    for conversation_id in list(conversation_ids) or sorted(stored):
        progress()
        snapshot = stored.get(conversation_id)
        if snapshot is not None:
            report.checked += 1
            report.differences.extend(verify_snapshot(reader, snapshot))
        elif next(iter(reader.logged_events(conversation_id)), None) is None:
            report.unknown.append(conversation_id)
        else:
            report.checked += 1
            report.differences.append(Difference(conversation_id, "snapshot", None, "missing"))
    return report
