"""Check a chat request before any LLM call: a bad one is rejected with a clear message.

Every problem a caller can cause is found here, so the turn either runs on a
sound request or ends as a ``rejected`` reply naming what to fix.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime

from goaicore.conversation.tools import Tool
from goaicore.errors import GoaicoreError, InputError
from goaicore.records import ChatRequest

MAX_TEXT_CHARS = 100_000


class RequestRejected(InputError):
    """The request cannot run; ``kind`` is machine-readable, the message says why."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind


class DeadlinePassed(GoaicoreError):
    """The request's deadline passed before it could run (its reply says ``timeout``)."""


def check_request(request: ChatRequest, registry: Mapping[str, Tool]) -> None:
    """Raise ``RequestRejected`` when the request cannot run as asked."""
    if not request.text.strip():
        raise RequestRejected("empty-text", "the request text is empty")
    if len(request.text) > MAX_TEXT_CHARS:
        raise RequestRejected(
            "text-too-long",
            f"the request text is {len(request.text):,} characters; at most {MAX_TEXT_CHARS:,}",
        )
    unknown = sorted({name for name in request.tools if name not in registry})
    if unknown:
        known = ", ".join(sorted(registry)) or "none"
        raise RequestRejected(
            "unknown-tool", f"unknown tool(s) {', '.join(unknown)}; this worker offers: {known}"
        )
    if request.model is not None and not request.model.strip():
        raise RequestRejected("bad-model", "the model name is empty (leave it out for the default)")


def tools_for(request: ChatRequest, registry: Mapping[str, Tool]) -> list[Tool]:
    """The tools a request may use: the ones it names, or all of them when it names none."""
    if not request.tools:
        return list(registry.values())
    return [registry[name] for name in dict.fromkeys(request.tools)]


def check_deadline(request: ChatRequest, now: datetime) -> None:
    """Raise ``DeadlinePassed`` when the request's deadline is behind ``now``."""
    if request.deadline is not None and request.deadline <= now:
        late = (now - request.deadline).total_seconds()
        raise DeadlinePassed(f"the request's deadline passed {late:.1f} s before it could run")
