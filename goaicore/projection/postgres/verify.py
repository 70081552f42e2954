"""Check every stored snapshot against the fold of the stored events.

The events are folded from their stored Avro bytes with the one fold, up to
the snapshot's last applied position, and compared field by field, exactly as
``goaicore verify`` does against the log. A snapshot that has applied events
the projection has not read yet is reported as pending, not as different.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from goaicore.errors import raises_ours
from goaicore.fold.policy import DEFAULT_POLICY, FoldPolicy, PolicyTimeline, timeline_of
from goaicore.fold.records import Applied, LogRecord, fold_records
from goaicore.projection.db import Connection
from goaicore.records import ConversationSnapshot, LogPosition
from goaicore.records.avro.api import decode_snapshot
from goaicore.replay.verify import Difference, VerifyReport, compare


@raises_ours
def stored_snapshots(
    conn: Connection, conversation_ids: Sequence[str] = ()
) -> dict[str, ConversationSnapshot]:
    """The projected snapshots, decoded from their stored Avro bytes."""
    query = "SELECT conversation_id, avro FROM conversation_snapshots"
    params: list[object] = []
    if conversation_ids:
        query += " WHERE conversation_id = ANY(%s)"
        params.append(list(conversation_ids))
    return {str(conv): decode_snapshot(bytes(avro)) for conv, avro in conn.execute(query, params)}


def refold(
    conn: Connection,
    conversation_id: str,
    partition: int,
    until_offset: int,
    policy: FoldPolicy | PolicyTimeline = DEFAULT_POLICY,
) -> ConversationSnapshot | None:
    """The fold of a conversation's stored events in one partition up to an offset.

    The stored events go through the worker's own loop (:func:`fold_records`).
    """
    snapshot: ConversationSnapshot | None = None
    key = conversation_id.encode()
    with conn.cursor() as cur:
        cur.execute(
            "SELECT log_offset, avro FROM conversation_events WHERE conversation_id = %s"
            " AND topic_partition = %s AND log_offset <= %s ORDER BY log_offset",
            (conversation_id, partition, until_offset),
        )
        records = (
            LogRecord(key, bytes(avro), LogPosition(partition=partition, offset=int(offset)))
            for offset, avro in cur
        )
        for outcome in fold_records(records, policy):
            if isinstance(outcome, Applied):
                snapshot = outcome.snapshot
    return snapshot


@raises_ours
def verify_db(
    conn: Connection,
    events_topic: str,
    conversation_ids: Sequence[str] = (),
    progress: Callable[[], None] = lambda: None,
) -> VerifyReport:
    """Compare each stored snapshot (those named, or all) with a re-fold of the stored events."""
    stored = stored_snapshots(conn, conversation_ids)
    read_up_to = {
        int(partition): int(next_offset)
        for partition, next_offset in conn.execute(
            "SELECT topic_partition, next_offset FROM projector_positions WHERE topic = %s",
            (events_topic,),
        )
    }
    report = VerifyReport()
    for conversation_id in list(conversation_ids) or sorted(stored):
        report.checked += 1
        progress()
        snapshot = stored.get(conversation_id)
        if snapshot is None:
            has_events = conn.execute(
                "SELECT 1 FROM conversation_events WHERE conversation_id = %s LIMIT 1",
                (conversation_id,),
            ).fetchone()
            if has_events is None:
                report.checked -= 1
                report.unknown.append(conversation_id)
            else:
                report.differences.append(Difference(conversation_id, "snapshot", None, "missing"))
            continue
        last = snapshot.last_position
        if last is not None and read_up_to.get(last.partition, 0) <= last.offset:
            report.pending.append(conversation_id)
            continue
        replayed = (
            refold(conn, conversation_id, last.partition, last.offset, timeline_of(snapshot))
            if last is not None
            else None
        )
        report.differences.extend(compare(conversation_id, snapshot, replayed))
    return report
