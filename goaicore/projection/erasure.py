"""Erasure in the projection: an erased conversation's earlier rows keep their skeleton only.

When a ``ConversationErased`` event is projected, in the same transaction: each of the
conversation's earlier event rows is rewritten from its stored record as the erased view
(the body's content marked ``[erased]``, the searchable text with it), and a record in
the clear (as written, or opened from its seal by the projector) is stored as that view
too, so nothing of its content stays in the row; a record still sealed (the projector
could not open it) stays as it is, unreadable once its key is gone. The replies to the
requests whose turns came before the erasure lose their text, and the conversation's
dead letters lose the record they set aside. Ids, types, times, token counts and costs
stay, as in the log.
"""

from __future__ import annotations

from collections.abc import Sequence

from goaicore.projection.db import Connection
from goaicore.projection.rows import EventRow, event_row
from goaicore.records.avro.api import decode_event, encode_event
from goaicore.sealing.content import MARK, erased

ERASED = "ConversationErased"


def redact_erased(conn: Connection, events: Sequence[EventRow]) -> int:
    """Redact what came before each erasure among ``events`` (already written); the
    number of event rows rewritten."""
    rewritten = 0
    for erasure in events:
        if erasure.body_type == ERASED:
            rewritten += _redact(conn, erasure)
    return rewritten


def _redact(conn: Connection, erasure: EventRow) -> int:
    where = (erasure.conversation_id, erasure.topic_partition, erasure.log_offset)
    rows = conn.execute(
        "SELECT topic_partition, log_offset, avro FROM conversation_events"
        " WHERE conversation_id = %s AND topic_partition = %s AND log_offset < %s",
        where,
    ).fetchall()
    for partition, offset, avro in rows:
        event = decode_event(bytes(avro))
        shown = erased(event)  # a sealed record keeps its seal: its key is what is gone
        stored = bytes(avro) if event.sealed is not None else encode_event(shown)
        row = event_row(partition, offset, shown, stored)
        conn.execute(
            "UPDATE conversation_events SET body = %s::jsonb, message_text = %s, avro = %s"
            " WHERE topic_partition = %s AND log_offset = %s",
            (row.body, row.message_text, row.avro, partition, offset),
        )
    conn.execute(
        "UPDATE chat_replies SET"
        " text = CASE WHEN text IS NULL THEN NULL ELSE %s END,"
        " error = CASE WHEN error IS NULL THEN NULL ELSE %s END"
        " WHERE conversation_id = %s AND request_id IN ("
        "  SELECT causation_id FROM conversation_events"
        "  WHERE conversation_id = %s AND topic_partition = %s AND log_offset < %s"
        "  AND causation_id IS NOT NULL)",
        (MARK, MARK, erasure.conversation_id, *where),
    )
    conn.execute(
        "UPDATE dead_letters SET value = NULL WHERE conversation_id = %s",
        (erasure.conversation_id,),
    )
    return len(rows)
