"""Bearer-token authentication: every route but the probes needs a configured token.

The tokens and how they are compared are :mod:`goaicore.http_auth`'s, shared with
the console. With no tokens configured every request passes: the worker then
binds loopback only unless told otherwise.
"""

from __future__ import annotations

from aiohttp import web
from aiohttp.typedefs import Middleware

from goaicore.http_auth import BearerTokens
from goaicore_store.http.errors import Handler, error_response

HEALTH_PATH = "/health"
READY_PATH = "/ready"
OPEN_PATHS = frozenset({HEALTH_PATH, READY_PATH})


def bearer_auth(tokens: BearerTokens) -> Middleware:
    """A middleware answering 401 to a request without an accepted token."""

    @web.middleware
    async def authenticate(request: web.Request, handler: Handler) -> web.StreamResponse:
        if not tokens or request.path in OPEN_PATHS:
            return await handler(request)
        if tokens.accepts(request.headers.get("Authorization")):
            return await handler(request)
        return error_response(
            401,
            "a bearer token is required: Authorization: Bearer <token> (GOAICORE_HTTP_TOKENS)",
            headers={"WWW-Authenticate": 'Bearer realm="goaicore"'},
        )

    return authenticate
