"""Signing in and out, and the open health probe."""

from __future__ import annotations

from aiohttp import web

from goaicore_console.auth import COOKIE, SESSION_SECONDS, TOKENS_KEY, local_target, session_cookie
from goaicore_console.rendering import render


async def login_page(request: web.Request) -> web.Response:
    target = local_target(request.query.get("next"))
    if not request.app[TOKENS_KEY]:
        raise web.HTTPSeeOther(target)  # no tokens configured: nothing to sign in to
    return render(request, "login.html", target=target, failed=False)


async def login(request: web.Request) -> web.Response:
    try:
        form = await request.post()
    except (UnicodeDecodeError, LookupError, ValueError):
        raise web.HTTPBadRequest(text="the sign-in form did not decode\n") from None
    token, target = form.get("token"), local_target(str(form.get("next") or "/"))
    tokens = request.app[TOKENS_KEY]
    cookie = session_cookie(tokens, token) if isinstance(token, str) else None
    if cookie is None:
        return render(request, "login.html", status=401, target=target, failed=True)
    response = web.HTTPSeeOther(target)
    response.set_cookie(
        COOKIE,
        cookie,
        max_age=SESSION_SECONDS,
        httponly=True,
        samesite="Strict",
        # Behind a proxy that ends TLS the request itself is plain HTTP; the browser's is not.
        secure=request.secure or request.headers.get("X-Forwarded-Proto") == "https",
        path="/",
    )
    raise response


async def logout(request: web.Request) -> web.Response:
    response = web.HTTPSeeOther("/login")
    response.del_cookie(COOKIE, path="/")
    raise response


async def health(request: web.Request) -> web.Response:
    return web.json_response({"status": "ok"})
