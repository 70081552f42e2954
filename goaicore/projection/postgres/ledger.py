"""The token and cost ledger: every assistant turn's usage, per conversation.

Read from the stored AssistantTurn bodies, so it is exactly what the log
says. Costs are in nano-US-dollars, as recorded; a turn without a recorded
cost counts in ``turns_without_cost`` rather than as zero.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from goaicore.errors import InputError, raises_ours
from goaicore.projection.db import Connection
from goaicore.projection.queries import PERIODS, Ledger, LedgerEntry, LedgerTotals, UsagePeriod

_USAGE = (
    "coalesce((body->'usage'->>'prompt_tokens')::bigint, 0),"
    " coalesce((body->'usage'->>'completion_tokens')::bigint, 0),"
    " coalesce((body->'usage'->>'total_tokens')::bigint, 0),"
    " coalesce((body->'usage'->>'llm_calls')::bigint, 0),"
    " (body->>'cost_usd_nanos')::bigint"
)


@raises_ours
def ledger(
    conn: Connection,
    conversation_id: str,
    since: datetime | None = None,
    until: datetime | None = None,
) -> Ledger:
    """A conversation's assistant turns (occurred in [since, until]) in log order, totalled."""
    where, params = _between(since, until)
    rows = conn.execute(
        "SELECT topic_partition, log_offset, occurred_at, coalesce(body->>'provider', ''),"
        f" coalesce(body->>'model', ''), {_USAGE} FROM conversation_events"
        f" WHERE conversation_id = %s AND {where} ORDER BY topic_partition, log_offset",
        (conversation_id, *params),
    ).fetchall()
    entries = [LedgerEntry(*row) for row in rows]
    totals = LedgerTotals(
        conversation_id,
        len(entries),
        sum(e.prompt_tokens for e in entries),
        sum(e.completion_tokens for e in entries),
        sum(e.total_tokens for e in entries),
        sum(e.llm_calls for e in entries),
        sum(e.cost_usd_nanos or 0 for e in entries),
        sum(1 for e in entries if e.cost_usd_nanos is None),
    )
    return Ledger(conversation_id, entries, totals)


def _between(since: datetime | None, until: datetime | None) -> tuple[str, list[Any]]:
    """The WHERE clause for assistant turns that occurred in [since, until]."""
    where, params = "body_type = 'AssistantTurn'", []
    if since is not None:
        where += " AND occurred_at >= %s"
        params.append(since)
    if until is not None:
        where += " AND occurred_at <= %s"
        params.append(until)
    return where, params


@raises_ours
def ledger_totals(
    conn: Connection,
    since: datetime | None = None,
    limit: int | None = None,
    until: datetime | None = None,
) -> list[LedgerTotals]:
    """Totals per conversation over turns that occurred in [since, until]; costliest first."""
    where, params = _between(since, until)
    query = (
        "SELECT conversation_id, count(*), sum(p)::bigint, sum(c)::bigint, sum(t)::bigint,"
        " sum(n)::bigint, coalesce(sum(cost), 0)::bigint,"
        " count(*) FILTER (WHERE cost IS NULL)"
        f" FROM (SELECT conversation_id, {_USAGE} FROM conversation_events WHERE {where})"
        " AS turns (conversation_id, p, c, t, n, cost)"
        " GROUP BY conversation_id ORDER BY coalesce(sum(cost), 0) DESC, sum(t) DESC,"
        " conversation_id"
    )
    if limit is not None:
        query += " LIMIT %s"
        params.append(limit)
    return [LedgerTotals(*row) for row in conn.execute(query, params)]


@raises_ours
def unpriced_models(
    conn: Connection, since: datetime | None = None, until: datetime | None = None
) -> list[str]:
    """``provider/model`` of every turn in [since, until] whose cost is unknown."""
    where, params = _between(since, until)
    rows = conn.execute(
        "SELECT DISTINCT coalesce(body->>'provider', '') || '/' || coalesce(body->>'model', '')"
        f" FROM conversation_events WHERE {where} AND body->>'cost_usd_nanos' IS NULL ORDER BY 1",
        params,
    ).fetchall()
    return [row[0] for row in rows]


@raises_ours
def usage_by_period(
    conn: Connection,
    since: datetime | None = None,
    until: datetime | None = None,
    period: str = "day",
) -> list[UsagePeriod]:
    """Tokens and cost summed per ``period`` (hour, day, week or month, UTC), oldest first."""
    if period not in PERIODS:
        raise InputError(f"unknown period {period!r} (known: {', '.join(PERIODS)})")
    where, params = _between(since, until)
    query = (
        "SELECT date_trunc(%s, occurred_at AT TIME ZONE 'UTC') AT TIME ZONE 'UTC', count(*),"
        " sum(p)::bigint, sum(c)::bigint, coalesce(sum(cost), 0)::bigint,"
        " count(*) FILTER (WHERE cost IS NULL)"
        f" FROM (SELECT occurred_at, {_USAGE} FROM conversation_events WHERE {where})"
        " AS turns (occurred_at, p, c, t, n, cost) GROUP BY 1 ORDER BY 1"
    )
    return [UsagePeriod(*row) for row in conn.execute(query, [period, *params])]
