"""The worker's HTTP API: routes under /v1, bearer tokens, JSON errors, the caller's trace,
an OpenAPI document."""

from goaicore.http_auth import BearerTokens
from goaicore_store.http.auth import bearer_auth
from goaicore_store.http.errors import json_errors
from goaicore_store.http.history_routes import register_history_views
from goaicore_store.http.routes import openapi_document, readiness, register_views
from goaicore_store.http.trace_context import trace_context

__all__ = [
    "BearerTokens",
    "bearer_auth",
    "json_errors",
    "openapi_document",
    "readiness",
    "register_history_views",
    "register_views",
    "trace_context",
]
