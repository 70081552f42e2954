"""Pages from Jinja2 templates, every value escaped, and the headers every page carries.

Autoescape is on for every template, so a conversation's text (``<script>``, ``<b>``)
is shown as text, never taken as markup; the content security policy allows no
script and no inline style at all, a second wall behind the first.
"""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path
from typing import Any
from urllib.parse import quote

import jinja2
from aiohttp import web

from goaicore_console.auth import TOKENS_KEY

TEMPLATES = Path(__file__).parent / "templates"
STATIC = Path(__file__).parent / "static"
ENVIRONMENT_KEY = web.AppKey("jinja", jinja2.Environment)

SECURITY_HEADERS = {
    "Content-Security-Policy": (
        "default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'; "
        "frame-ancestors 'none'; base-uri 'none'"
    ),
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "same-origin",
    "Cache-Control": "no-store",
}


def environment() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(TEMPLATES),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters.update(
        time=format_time,
        usd=format_usd,
        pretty=pretty_json,
        count=format_count,
        segment=url_segment,
    )
    return env


def render(request: web.Request, template: str, status: int = 200, **context: Any) -> web.Response:
    page = (
        request.app[ENVIRONMENT_KEY]
        .get_template(template)
        .render(request=request, with_tokens=bool(request.app[TOKENS_KEY]), **context)
    )
    return web.Response(text=page, status=status, content_type="text/html", charset="utf-8")


def url_segment(value: str) -> str:
    """``value`` quoted as one path segment or query value (a ``/`` or ``&`` too)."""
    return quote(value, safe="")


def format_time(value: datetime | None) -> str:
    return "" if value is None else value.strftime("%Y-%m-%d %H:%M:%S")


def format_usd(nanos: int | None) -> str:
    """Nano-dollars as dollars; unknown stays unknown (never shown as zero)."""
    if nanos is None:
        return "unpriced"
    return f"${nanos / 1e9:,.6f}"


def format_count(value: int | None) -> str:
    return "" if value is None else f"{value:,}"


def pretty_json(value: Any) -> str:
    """JSON (a value, or JSON text) indented for reading; text that is not JSON as is."""
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            return str(value)
    return json.dumps(value, indent=2, ensure_ascii=False, sort_keys=True)


@web.middleware
async def security_headers(request: web.Request, handler: Any) -> web.StreamResponse:
    try:
        response: web.StreamResponse = await handler(request)
    except web.HTTPException as err:
        err.headers.update(SECURITY_HEADERS)
        raise
    response.headers.update(SECURITY_HEADERS)
    return response
