"""Verify, dead letters, and tokens and cost over time."""

from __future__ import annotations

from datetime import timedelta

from aiohttp import web

from goaicore.projection.queries import PERIODS
from goaicore.records import utc_now
from goaicore_console.charts import bar_chart
from goaicore_console.keys import DATABASE_KEY, JOBS_KEY
from goaicore_console.pages import params
from goaicore_console.rendering import render
from goaicore_console.verify_job import side_by_side

DEAD_LETTERS_PAGE = 100
DEFAULT_USAGE_DAYS = 30


async def verify_page(request: web.Request) -> web.Response:
    jobs = request.app[JOBS_KEY]
    conversation_id = params.text(request, "conversation")
    report = await jobs.one(conversation_id) if conversation_id else None
    job = jobs.current
    job_report = job.report if job is not None else None
    return render(
        request,
        "verify.html",
        conversation_id=conversation_id,
        report=report,
        differences=[side_by_side(d) for d in report.differences] if report else [],
        job=job,
        job_differences=[side_by_side(d) for d in job_report.differences] if job_report else [],
    )


async def verify_all(request: web.Request) -> web.Response:
    await request.app[JOBS_KEY].start_all()
    raise web.HTTPSeeOther("/verify")


async def dead_letters_page(request: web.Request) -> web.Response:
    conversation_id = params.text(request, "conversation")
    before = params.position(request, "before")
    letters = await request.app[DATABASE_KEY].run(
        lambda q: q.dead_letters(conversation_id, limit=DEAD_LETTERS_PAGE, before=before)
    )
    next_url = None
    if len(letters) == DEAD_LETTERS_PAGE:
        partition, offset = letters[-1].position
        next_url = str(request.rel_url.update_query(before=f"{partition}:{offset}"))
    return render(
        request,
        "dead_letters.html",
        letters=letters,
        conversation_id=conversation_id,
        next_url=next_url,
    )


async def usage_page(request: web.Request) -> web.Response:
    period = params.text(request, "period") or "day"
    if period not in PERIODS:
        raise params.BadParameterError(f"period: one of {', '.join(PERIODS)}")
    until = params.moment(request, "until")
    since = params.moment(request, "from")
    if since is None:
        try:
            since = (until or utc_now()) - timedelta(days=DEFAULT_USAGE_DAYS)
        except OverflowError:
            raise params.BadParameterError("until: too early to count back from") from None
    periods = await request.app[DATABASE_KEY].run(lambda q: q.usage_by_period(since, until, period))
    label = "%Y-%m-%d %H:00" if period == "hour" else "%Y-%m-%d"
    charts = [
        bar_chart(
            f"Tokens per {period}",
            [(p.start.strftime(label), p.prompt_tokens + p.completion_tokens) for p in periods],
        ),
        bar_chart(
            f"Cost per {period} (USD)",
            [(p.start.strftime(label), p.cost_usd_nanos / 1e9) for p in periods],
            unit="$",
            digits=6,
        ),
    ]
    return render(
        request,
        "usage.html",
        periods=periods,
        charts=charts,
        period=period,
        periods_known=PERIODS,
        since=since,
        until=until,
    )
