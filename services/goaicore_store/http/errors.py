"""Every HTTP error is JSON ``{"error": {"type": ..., "message": ...}}``, whatever raised it.

The views raise :class:`ApiError`; aiohttp's own errors (no such route, a method
not allowed, a body over the size limit) and anything unexpected are turned into
the same shape by :func:`json_errors`, the outermost middleware.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from aiohttp import web

log = logging.getLogger(__name__)

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]

ERROR_TYPES: Mapping[int, str] = {
    400: "invalid_request",
    401: "unauthorized",
    404: "not_found",
    405: "method_not_allowed",
    409: "conflict",
    410: "gone",
    413: "payload_too_large",
    415: "unsupported_media_type",
    422: "rejected",
    500: "internal",
    502: "upstream_error",
    503: "unavailable",
    504: "timeout",
}


class ApiError(Exception):
    """An answer with an error status: ``extra`` goes into the error object beside the
    message, ``headers`` (such as ``Retry-After``) into the answer."""

    def __init__(
        self,
        status: int,
        message: str,
        error_type: str | None = None,
        headers: Mapping[str, str] | None = None,
        **extra: Any,
    ):
        super().__init__(message)
        self.status = status
        self.message = message
        self.error_type = error_type or ERROR_TYPES.get(status, "error")
        self.headers = headers
        self.extra = extra


def error_body(status: int, message: str, error_type: str | None = None, **extra: Any) -> Any:
    return {
        "error": {
            "type": error_type or ERROR_TYPES.get(status, "error"),
            "message": message,
            **extra,
        }
    }


def error_response(
    status: int,
    message: str,
    error_type: str | None = None,
    headers: Mapping[str, str] | None = None,
    **extra: Any,
) -> web.Response:
    return web.json_response(
        error_body(status, message, error_type, **extra), status=status, headers=headers
    )


@web.middleware
async def json_errors(request: web.Request, handler: Handler) -> web.StreamResponse:
    """ApiError, aiohttp's HTTP errors and unexpected exceptions as JSON error answers."""
    try:
        return await handler(request)
    except ApiError as err:
        return error_response(
            err.status, err.message, err.error_type, headers=err.headers, **err.extra
        )
    except web.HTTPException as err:
        if err.status < 400:
            raise
        headers = {"Allow": err.headers["Allow"]} if "Allow" in err.headers else None
        return error_response(err.status, _message(err, request), headers=headers)
    except Exception:
        log.exception("HTTP %s %s failed", request.method, request.path)
        return error_response(500, "internal error; the worker's log has the details")


def _message(err: web.HTTPException, request: web.Request) -> str:
    if err.status == 404:
        return f"no route {request.path!r}; the API is under /v1 (see /v1/openapi.json)"
    if err.status == 405:
        allowed = err.headers.get("Allow", "")
        return f"{request.method} is not allowed on {request.path!r}; allowed: {allowed}"
    return err.reason
