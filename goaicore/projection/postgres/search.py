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

# PostgreSQL marks matches and joins fragments with private-use characters taken out of
# the text first, so the text's own brackets never read as marks; the snippet is then
# rebuilt from the text itself (see :func:`snippet`).
START, STOP, JOIN = "\ue000", "\ue001", "\ue002"
MARKS = START + STOP + JOIN
HIGHLIGHT = (
    f"MaxFragments=2, MaxWords=18, MinWords=6, StartSel={START}, StopSel={STOP}, "
    f"FragmentDelimiter={JOIN}"
)


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
        " h.rank, ts_headline('english', t.text, q.query, %s), t.text"
        " FROM hits h, q, LATERAL (SELECT translate(h.message_text, %s, '') AS text) t"
        " ORDER BY h.rank DESC, h.occurred_at DESC, h.topic_partition, h.log_offset"
    )
    params += [HIGHLIGHT, MARKS]
    return [
        SearchHit(cid, partition, offset, body_type, at, rank, snippet(text, headline))
        for cid, partition, offset, body_type, at, rank, headline, text in conn.execute(
            query, params
        )
    ]


def snippet(text: str, headline: str) -> str:
    """The fragments of ``headline`` as they stand in ``text``, matches in [brackets].

    ts_headline starts and ends a fragment at a word, dropping what touches it (the
    ``[`` of ``[stage]``, the ``(`` of ``(door)``): each fragment is found in the text
    and widened to the whole of its first and last token, so no character is lost."""
    shown = []
    for fragment in headline.split(JOIN):
        plain = fragment.replace(START, "").replace(STOP, "")
        at = _place(text, plain)
        if at < 0:  # not found as it stands: shown as PostgreSQL made it
            shown.append(fragment)
            continue
        start, end = at, at + len(plain)
        while start > 0 and not text[start - 1].isspace():
            start -= 1
        while end < len(text) and not text[end].isspace():
            end += 1
        shown.append(text[start:at] + fragment + text[at + len(plain) : end])
    return " … ".join(shown).replace(START, "[").replace(STOP, "]")


def _place(text: str, plain: str) -> int:
    """Where ``plain`` stands in ``text`` as whole words (else anywhere; -1: nowhere)."""
    if not plain:
        return -1
    first = at = text.find(plain)
    while at >= 0:
        end = at + len(plain)
        if (at == 0 or not text[at - 1].isalnum()) and (
            end == len(text) or not text[end].isalnum()
        ):
            return at
        at = text.find(plain, at + 1)
    return first
