"""The console's sign-in: the API's bearer tokens, or a session cookie made from one.

A browser cannot send a bearer header by itself, so ``/login`` takes a token once
and sets a cookie holding an expiry and an HMAC of it under that token: the cookie
proves the token without containing it, lapses after ``SESSION_SECONDS``, and stops
working when the token is removed from the configuration. Scripts may send
``Authorization: Bearer <token>`` instead. With no tokens configured every request
passes (the console then listens on loopback only, as the API does).
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from urllib.parse import quote, urlsplit

from aiohttp import web
from aiohttp.typedefs import Middleware
from yarl import URL

from goaicore.http_auth import BearerTokens

COOKIE = "goaicore_console"
SESSION_SECONDS = 12 * 3600
PURPOSE = b"goaicore console session "
OPEN_PATHS = frozenset({"/health", "/login"})
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
LOOPBACK_NAMES = frozenset({"127.0.0.1", "localhost", "::1"})
TOKENS_KEY = web.AppKey("tokens", BearerTokens)

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def session_cookie(tokens: BearerTokens, token: str, now: float | None = None) -> str | None:
    """The cookie value for a signed-in ``token``, or None when it is not accepted."""
    expires = int((now if now is not None else time.time()) + SESSION_SECONDS)
    tag = tokens.tag(token, PURPOSE + str(expires).encode())
    return None if tag is None else f"{expires}.{tag}"


def accepts_cookie(tokens: BearerTokens, value: str, now: float | None = None) -> bool:
    expires, _, tag = value.partition(".")
    if not (expires.isascii() and expires.isdigit() and len(expires) <= 12):
        return False
    if int(expires) < (now if now is not None else time.time()):
        return False
    return tokens.accepts_tag(tag, PURPOSE + expires.encode())


def signed_in(request: web.Request) -> bool:
    tokens = request.app[TOKENS_KEY]
    if not tokens:
        return True
    if tokens.accepts(request.headers.get("Authorization")):
        return True
    cookie = request.cookies.get(COOKIE)
    return cookie is not None and accepts_cookie(tokens, cookie)


def console_auth() -> Middleware:
    """Pages need a token or a session; a browser without one is sent to sign in."""

    @web.middleware
    async def authenticate(request: web.Request, handler: Handler) -> web.StreamResponse:
        if request.path in OPEN_PATHS or request.path.startswith("/static/"):
            return await handler(request)
        if signed_in(request):
            return await handler(request)
        if request.method == "GET" and "text/html" in request.headers.get("Accept", ""):
            raise web.HTTPSeeOther(f"/login?next={quote(request.path_qs, safe='')}")
        raise web.HTTPUnauthorized(
            text="sign in at /login, or send Authorization: Bearer <token>\n",
            headers={"WWW-Authenticate": 'Bearer realm="goaicore console"'},
        )

    return authenticate


def same_site_only() -> Middleware:
    """Refuse what a page of another site can make a browser send.

    A POST whose ``Origin`` names another host is refused (the session cookie is
    SameSite=Strict already; this also covers the console without tokens). Without
    tokens, only a loopback ``Host`` is served: a site whose name a rebinding DNS
    points at 127.0.0.1 cannot read the console through the visitor's browser.
    """

    @web.middleware
    async def guard(request: web.Request, handler: Handler) -> web.StreamResponse:
        host, port = _host_and_port(request.host)
        if not request.app[TOKENS_KEY] and host not in LOOPBACK_NAMES:
            raise web.HTTPMisdirectedRequest(
                text="without tokens the console answers only to 127.0.0.1 or localhost\n"
            )
        origin = request.headers.get("Origin")
        if request.method not in SAFE_METHODS and origin is not None:
            parts = urlsplit(origin)
            same_port = port is None or parts.port is None or parts.port == port
            if (parts.hostname or "") != host or not same_port:
                raise web.HTTPForbidden(text="a request from another site is refused\n")
        return await handler(request)

    return guard


def _host_and_port(host_header: str) -> tuple[str, int | None]:
    parts = urlsplit(f"//{host_header}")
    try:
        return (parts.hostname or ""), parts.port
    except ValueError:  # a port that is not a number
        return (parts.hostname or ""), -1


def local_target(target: str | None) -> str:
    """Where to go after signing in: a path on this console, never another site.

    Checked as the Location header will carry it (yarl drops tabs and line breaks, so
    a slash, a tab and ``/evil.example`` would become ``//evil.example``), and refused
    outright with any control character or space.
    """
    if not target or any(ord(c) < 0x21 or c == "\\" for c in target):
        return "/"
    try:
        normal = str(URL(target))
    except ValueError:
        return "/"
    if not normal.startswith("/") or normal.startswith("//") or URL(normal).is_absolute():
        return "/"
    return normal
