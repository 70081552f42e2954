"""Conversations: the list (search, filters, pages), one conversation's timeline, and
its snapshot as of any point."""

from __future__ import annotations

from dataclasses import dataclass

from aiohttp import web

from goaicore.fold.policy import DEFAULT_POLICY, timeline_of
from goaicore.projection.queries import ConversationFilter, Ledger, ProjectionQueries
from goaicore.records import ConversationSnapshot
from goaicore_console.asof import as_of
from goaicore_console.charts import bar_chart
from goaicore_console.keys import DATABASE_KEY
from goaicore_console.pages import params
from goaicore_console.rendering import render
from goaicore_console.timeline import Entry, timeline

PAGE_SIZE = 50
TIMELINE_PAGE = 500


async def home(request: web.Request) -> web.Response:
    raise web.HTTPSeeOther("/conversations")


async def conversation_list(request: web.Request) -> web.Response:
    where = ConversationFilter(
        text=params.text(request, "q"),
        active_from=params.moment(request, "from"),
        active_until=params.moment(request, "until"),
        has_failures=params.flag(request, "failures"),
        has_compactions=params.flag(request, "compactions"),
        has_dead_letters=params.flag(request, "dead_letters"),
    )
    cursor = params.text(request, "cursor")
    page = await request.app[DATABASE_KEY].run(
        lambda q: q.conversation_page(where, limit=PAGE_SIZE, cursor=cursor)
    )
    next_url = None
    if page.next_cursor is not None:
        next_url = str(request.rel_url.update_query(cursor=page.next_cursor))
    first_url = None
    if cursor:
        kept = {k: v for k, v in request.query.items() if k != "cursor"}
        first_url = str(request.rel_url.with_query(kept))
    return render(
        request,
        "conversations.html",
        page=page,
        where=where,
        query=request.query,
        next_url=next_url,
        first_url=first_url,
    )


@dataclass(frozen=True)
class _Conversation:
    events: int
    replies: int
    entries: list[Entry]
    ledger: Ledger
    snapshot: ConversationSnapshot | None


def _load(queries: ProjectionQueries, conversation_id: str) -> _Conversation:
    """Everything the page shows, timeline folded here: in the query's thread, never on
    the event loop, which a long conversation's fold would hold up (health probes too)."""
    events = queries.history(conversation_id)
    replies = queries.replies_of(conversation_id)
    snapshot = queries.stored_snapshots([conversation_id]).get(conversation_id)
    policy = timeline_of(snapshot) if snapshot is not None else DEFAULT_POLICY
    return _Conversation(
        len(events),
        len(replies),
        timeline(events, replies, policy),
        queries.ledger(conversation_id),
        snapshot,
    )


async def conversation(request: web.Request) -> web.Response:
    conversation_id = params.conversation_id(request)
    page_number = params.integer(request, "page", minimum=1) or 1
    found = await request.app[DATABASE_KEY].run(_load, conversation_id)
    if not found.events and not found.replies:
        raise params.NothingHereError(f"no conversation {conversation_id!r} in the projection")
    entries = found.entries
    pages = max(1, -(-len(entries) // TIMELINE_PAGE))
    shown = entries[(page_number - 1) * TIMELINE_PAGE : page_number * TIMELINE_PAGE]
    turns = found.ledger.entries
    charts = [
        bar_chart(
            "Tokens per turn (prompt + completion)",
            [(f"{e.partition}:{e.offset}", e.prompt_tokens + e.completion_tokens) for e in turns],
        ),
        bar_chart(
            "Cost per turn (USD; a turn without a price shows as 0)",
            [(f"{e.partition}:{e.offset}", (e.cost_usd_nanos or 0) / 1e9) for e in turns],
            unit="$",
            digits=6,
        ),
    ]
    return render(
        request,
        "conversation.html",
        conversation_id=conversation_id,
        entries=shown,
        event_count=found.events,
        reply_count=found.replies,
        page_number=page_number,
        pages=pages,
        totals=found.ledger.totals,
        unpriced=found.ledger.unpriced,
        snapshot=found.snapshot,
        charts=charts,
    )


async def as_of_page(request: web.Request) -> web.Response:
    conversation_id = params.conversation_id(request)
    view = await request.app[DATABASE_KEY].run(
        as_of,
        conversation_id,
        offset=params.integer(request, "offset"),
        time=params.moment(request, "time"),
        before=params.integer(request, "before"),
    )
    if not view.points:
        raise params.NothingHereError(f"no conversation {conversation_id!r} in the projection")
    return render(request, "as_of.html", view=view, conversation_id=conversation_id)
