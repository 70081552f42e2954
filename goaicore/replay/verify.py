"""Check stored snapshots against replays of the events they applied.

A snapshot the store worker wrote and a fold of the same events up to its last
position must be equal, field for field; a report lists every field that is not.
The log is one source of events (here), the PostgreSQL projection another
(``goaicore.projection.postgres.verify``): both fill the same report.
"""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from goaicore.fold.policy import DEFAULT_POLICY, timeline_of
from goaicore.fold.records import LogRecord, Rejected, fold_records
from goaicore.records import ConversationSnapshot, LogPosition
from goaicore.replay.log import replay
from goaicore.replay.reader import HistoryReader
from goaicore.sealing.keyring import not_erased

if TYPE_CHECKING:
    from goaicore.sealing.records import KeyLookup


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
    unreadable: dict[str, list[int]] = field(default_factory=dict)
    """Offsets of sealed events that could not be opened and that no erasure covers, by
    conversation: a data key lost without an erasure, or a master key not held here."""

    @property
    def different(self) -> set[str]:
        return {d.conversation_id for d in self.differences}

    @property
    def equal(self) -> int:
        return self.checked - len(self.different) - len(self.pending)


def verify_snapshot(reader: HistoryReader, stored: ConversationSnapshot) -> list[Difference]:
    """Replay ``stored``'s conversation up to its last position, under its bounds, and compare."""
    until = stored.last_position.offset if stored.last_position else -1
    replayed = replay(reader, stored.conversation_id, until, policy=timeline_of(stored)).snapshot
    return compare(stored.conversation_id, stored, replayed)


def verify_log(
    reader: HistoryReader,
    stored: Mapping[str, ConversationSnapshot],
    conversation_ids: Iterable[str] = (),
    progress: bool | None = None,
) -> VerifyReport:
    """Verify the stored snapshots (those named, or all) against one read of the log.

    Every conversation is folded in the same pass, each up to its snapshot's last
    position and under its snapshot's bounds, through the worker's own loop; a record
    the worker set aside is skipped and counted in ``reader.skipped``.
    """
    verifier = LogVerifier(stored, conversation_ids, reader.keys)
    for rejected in verifier.feed(reader.all_records(progress)):
        reader.skip(rejected.record, rejected.reason, rejected.detail)
    return verifier.report()


class LogVerifier:
    """Replays of stored snapshots, folded from the log's records in one pass.

    The records may come in any number of :meth:`feed` calls, each partition's in
    order (a reader's batches); :meth:`report` compares the replays with the snapshots.
    """

    def __init__(
        self,
        stored: Mapping[str, ConversationSnapshot],
        conversation_ids: Iterable[str] = (),
        keys: KeyLookup | None = None,
    ) -> None:
        self.stored = stored
        self.keys = keys
        wanted = list(dict.fromkeys(conversation_ids)) or sorted(stored)
        self._ids = {conversation_id.encode(): conversation_id for conversation_id in wanted}
        self._until = {key: _last_position(stored.get(c)) for key, c in self._ids.items()}
        self._policies = {
            key: timeline_of(s) for key, c in self._ids.items() if (s := stored.get(c))
        }
        self._replayed: dict[bytes, ConversationSnapshot] = {}
        self._unopened: dict[bytes, list[int]] = {}

    def feed(self, records: Iterable[LogRecord]) -> Iterator[Rejected]:
        """Fold the wanted records among ``records``; yield those the worker set aside."""
        until = self._until

        def wanted() -> Iterator[LogRecord]:
            for record in records:
                last = until.get(record.key) if record.key is not None else None
                if last is not None and _within(record.position, last):
                    yield record

        folded = fold_records(
            wanted(),
            DEFAULT_POLICY,
            current=self._replayed.get,
            own_policy=self._policies.get,
            keys=self.keys,
        )
        for outcome in folded:
            if isinstance(outcome, Rejected):
                yield outcome
                continue
            key = outcome.event.conversation_id.encode()
            self._replayed[key] = outcome.snapshot
            if outcome.event.sealed is not None and outcome.changed:  # not opened here
                self._unopened.setdefault(key, []).append(outcome.record.position.offset)

    def report(self) -> VerifyReport:
        """How the replays so far compare with the stored snapshots."""
        report = VerifyReport()
        for key, offsets in self._unopened.items():
            lost = not_erased(offsets, self._replayed[key])
            if lost:
                report.unreadable[self._ids[key]] = lost
        for key, conversation_id in self._ids.items():
            snapshot = self.stored.get(conversation_id)
            replayed = self._replayed.get(key)
            if snapshot is not None:
                report.checked += 1
                report.differences.extend(compare(conversation_id, snapshot, replayed))
            elif replayed is None:
                report.unknown.append(conversation_id)
            else:
                report.checked += 1
                report.differences.append(Difference(conversation_id, "snapshot", None, "missing"))
        return report


_ANY = -1


def _within(position: LogPosition, last: LogPosition) -> bool:
    return position.offset <= last.offset and last.partition in (position.partition, _ANY)


def _last_position(snapshot: ConversationSnapshot | None) -> LogPosition:
    """How far to fold: to a snapshot's last applied position (in its partition); a
    conversation without a snapshot, everything (to tell a missing one from an unknown)."""
    if snapshot is None:
        return LogPosition(partition=_ANY, offset=sys.maxsize)
    return snapshot.last_position or LogPosition(partition=_ANY, offset=-1)
