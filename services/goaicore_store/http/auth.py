"""Bearer-token authentication: every route but the probes needs a configured token.

Tokens come from ``GOAICORE_HTTP_TOKENS`` and ``GOAICORE_HTTP_TOKENS_FILE``; a
presented token is compared with each in constant time, so the answer's timing
does not tell how much of a guess was right. With no tokens configured every
request passes: the worker then binds loopback only unless told otherwise.
"""

from __future__ import annotations

import hmac
from collections.abc import Iterable

from aiohttp import web
from aiohttp.typedefs import Middleware

from goaicore_store.http.errors import Handler, error_response

HEALTH_PATH = "/health"
READY_PATH = "/ready"
OPEN_PATHS = frozenset({HEALTH_PATH, READY_PATH})


class BearerTokens:
    """The accepted tokens; never shown (the repr tells only how many there are)."""

    def __init__(self, tokens: Iterable[str]) -> None:
        self._tokens = tuple(token.encode() for token in tokens)

    def __repr__(self) -> str:
        return f"BearerTokens({len(self._tokens)} tokens)"

    def __bool__(self) -> bool:
        return bool(self._tokens)

    def accepts(self, authorization: str | None) -> bool:
        """True when ``authorization`` is ``Bearer <a configured token>``."""
        scheme, _, credential = (authorization or "").partition(" ")
        if scheme.lower() != "bearer" or not credential.strip():
            return False
        given = credential.strip().encode()
        matched = False
        for token in self._tokens:  # every token compared: no early exit to time
            matched |= hmac.compare_digest(given, token)
        return matched


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
