"""The projected chat replies: what each chat request was answered, in log order."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from goaicore.errors import raises_ours
from goaicore.projection.db import Connection


@dataclass(frozen=True)
class StoredReply:
    """One ``chat_replies`` row: the reply's log position and the ChatReply's fields.

    The token counts are None for a reply without usage; ``published_at`` is the
    record's time (None if it has none).
    """

    partition: int
    offset: int
    request_id: str
    conversation_id: str
    status: str
    text: str | None
    error: str | None
    prompt_tokens: int | None
    completion_tokens: int | None
    llm_calls: int | None
    latency_ms: int
    published_at: datetime | None


@raises_ours
def replies_of(conn: Connection, conversation_id: str) -> list[StoredReply]:
    """The conversation's replies in log order (a retried request's replies each appear)."""
    rows = conn.execute(
        "SELECT topic_partition, log_offset, request_id, conversation_id, status, text, error,"
        " prompt_tokens, completion_tokens, llm_calls, latency_ms, published_at"
        " FROM chat_replies WHERE conversation_id = %s ORDER BY topic_partition, log_offset",
        (conversation_id,),
    )
    return [StoredReply(*row) for row in rows]
