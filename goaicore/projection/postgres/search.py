"""Full-text search over message text (PostgreSQL tsvector, GIN index).

The projector stores each event's words (user and assistant text, tool
results, game event text, compaction summaries, failure messages) in
``message_text``; a generated ``search_vector`` (English stemming) is indexed.
Queries use web-search syntax: words, "quoted phrases", ``or``, ``-word``.
"""

from __future__ import annotations

from typing import Any

from goaicore.errors import raises_ours
from goaicore.projection.db import Connection
from goaicore.projection.queries import SearchHit

HIGHLIGHT = "MaxFragments=2, MaxWords=18, MinWords=6, StartSel=[, StopSel=], FragmentDelimiter= … "


@raises_ours
def search(
    conn: Connection, text: str, conversation_id: str | None = None, limit: int = 20
) -> list[SearchHit]:
    """The best matches first (rank, then the most recent)."""
    params: list[Any] = [text]
    where = "e.search_vector @@ q.query"
    if conversation_id is not None:
        where += " AND e.conversation_id = %s"
        params.append(conversation_id)
    params.append(limit)
    # Rank and limit first; the snippets (costly) only for the rows shown.
    query = (
        "WITH q AS (SELECT websearch_to_tsquery('english', %s) AS query),"
        " hits AS (SELECT e.conversation_id, e.topic_partition, e.log_offset, e.body_type,"
        " e.occurred_at, ts_rank(e.search_vector, q.query) AS rank, e.message_text"
        f" FROM conversation_events e, q WHERE {where}"
        " ORDER BY rank DESC, e.occurred_at DESC, e.topic_partition, e.log_offset LIMIT %s)"
        " SELECT h.conversation_id, h.topic_partition, h.log_offset, h.body_type, h.occurred_at,"
        " h.rank, ts_headline('english', h.message_text, q.query, %s)"
        " FROM hits h, q ORDER BY h.rank DESC, h.occurred_at DESC, h.topic_partition, h.log_offset"
    )
    params.append(HIGHLIGHT)
    return [SearchHit(*row) for row in conn.execute(query, params)]
