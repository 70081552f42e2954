"""The projected chat replies: what each chat request was answered, in log order."""

from __future__ import annotations

from goaicore.errors import raises_ours
from goaicore.projection.db import Connection
from goaicore.projection.rows import ReplyRow


@raises_ours
def replies_of(conn: Connection, conversation_id: str) -> list[ReplyRow]:
    """The conversation's replies in log order (a retried request's replies each appear)."""
    rows = conn.execute(
        "SELECT topic_partition, log_offset, request_id, conversation_id, status, text, error,"
        " prompt_tokens, completion_tokens, llm_calls, latency_ms, published_at"
        " FROM chat_replies WHERE conversation_id = %s ORDER BY topic_partition, log_offset",
        (conversation_id,),
    )
    return [ReplyRow(*row) for row in rows]
