"""The one loop over records of ``events``: admit, fold, and say what became of each.

The store worker, log replay and verify all fold through :func:`fold_records`, so
they agree on which records count (the admission rule: it sits in its key's
partition, decodes, its key is its conversation id, that id fits a snapshot) and on
what a record that breaks the fold costs (that record, never the loop). A replay
therefore reproduces the worker's snapshot, and verify can only report a difference
the worker really made.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from goaicore.fold.admission import Unfoldable, admit
from goaicore.fold.fold import fold
from goaicore.fold.policy import FoldPolicy, PolicyTimeline
from goaicore.records import ConversationEvent, ConversationSnapshot, LoggedEvent, LogPosition

if TYPE_CHECKING:
    from goaicore.sealing.records import KeyLookup

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class LogRecord:
    """A record of ``events`` as read from the log; ``origin`` is the reader's own record.

    ``partitions``: how many its topic has, when it was read from Kafka; a record whose
    key belongs to another of them is not folded (see :mod:`goaicore.fold.admission`).
    None for records that never were in a topic's partition of their own choosing (a
    projection's rows, the in-memory store's log): their place is not checked.
    """

    key: bytes | None
    value: bytes | None
    position: LogPosition
    origin: Any = None
    partitions: int | None = None


@dataclass(frozen=True, slots=True)
class Applied:
    """A record folded: its event, and its conversation's snapshot after it."""

    record: LogRecord
    event: ConversationEvent
    snapshot: ConversationSnapshot
    changed: bool  # False for a record already applied (a duplicate)


@dataclass(frozen=True, slots=True)
class Rejected:
    """A record not folded, with the reason a dead letter carries."""

    record: LogRecord
    reason: str
    detail: str
    owner: int | None = None
    """Set for another partition's record: the partition it belongs to. The store worker
    forwards it there rather than set it aside; every reader skips it."""


def fold_records(
    records: Iterable[LogRecord],
    policy: FoldPolicy | PolicyTimeline,
    current: Callable[[bytes], ConversationSnapshot | None] = lambda key: None,
    keep: Callable[[ConversationEvent], bool] | None = None,
    own_policy: Callable[[bytes], FoldPolicy | PolicyTimeline | None] = lambda key: None,
    keys: KeyLookup | None = None,
) -> Iterator[Applied | Rejected]:
    """Fold ``records`` in order onto the snapshots ``current`` returns (none by default).

    ``keep`` leaves out admitted events it returns False for (an as-of replay);
    ``own_policy`` gives a conversation bounds of its own (a stored snapshot's, when
    verify folds many conversations in one pass), else ``policy`` applies. A timeline
    applies each stretch's own policy (a replay of a snapshot whose bounds changed).
    ``keys`` opens sealed events (see :func:`~goaicore.fold.admission.admit`).
    """
    latest: dict[bytes, ConversationSnapshot | None] = {}
    for record in records:
        bounds = (own_policy(bytes(record.key)) if record.key is not None else None) or policy
        if isinstance(bounds, PolicyTimeline):
            bounds = bounds.at(record.position)
        event = _admit(record, keys, bounds.record_limit)
        if isinstance(event, Unfoldable):
            yield Rejected(record, event.reason, event.detail, event.owner)
            continue
        if keep is not None and not keep(event):
            continue
        key = event.conversation_id.encode()
        before = latest[key] if key in latest else current(key)
        try:
            after = fold(before, event, record.position, bounds)
        except Exception as err:  # a bug in the fold must cost one record, not the loop
            log.exception("fold failed at %s", record.position)
            yield Rejected(record, "fold-failed", f"{type(err).__name__}: {err}")
            continue
        latest[key] = after
        yield Applied(record, event, after, changed=after is not before)


def admitted(
    record: LogRecord, keys: KeyLookup | None = None, record_limit: int | None = None
) -> LoggedEvent | Unfoldable:
    """The event a record holds with its position, or why the fold does not take it;
    ``record_limit``: the fold's at the record's position (None: any size)."""
    event = _admit(record, keys, record_limit)
    if isinstance(event, Unfoldable):
        return event
    return LoggedEvent(record.position.partition, record.position.offset, event)


def _admit(
    record: LogRecord, keys: KeyLookup | None, record_limit: int | None
) -> ConversationEvent | Unfoldable:
    partition = record.position.partition if record.partitions is not None else None
    return admit(record.key, record.value, keys, partition, record.partitions, record_limit)


def log_skipped(topic: str, record: LogRecord, reason: str, detail: str) -> None:
    """Say that a reader left out a record the fold does not take, and why."""
    log.warning(
        "skipped an event the fold does not take at %s[%d]@%d: %s (%s)",
        topic,
        record.position.partition,
        record.position.offset,
        reason,
        detail,
    )
