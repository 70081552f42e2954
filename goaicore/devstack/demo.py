"""A short scripted game session through the store worker's HTTP API (``make run``).

Two game events, then questions whose answers use them and the game's tools,
so a developer sees the whole loop working: events in the log, the chat agent
reading them back, tool calls, replies, the last one streamed as Server-Sent
Events. With no API key the offline model answers (its replies start with
``[offline]``).
"""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from typing import Any

from goaicore.stopping import Pause

CONVERSATION = "demo-player"

SESSION: tuple[tuple[str, str], ...] = (
    ("event", "Player checked in at Harrogate Theatre"),
    ("ask", "Where am I right now?"),
    ("event", "Player solved the stage door riddle: +5 points for Leeds"),
    ("ask", "What is the score_lookup for Leeds?"),
    ("stream", "Give me the location_info for Royal Pump Room"),
)


@dataclass(frozen=True)
class DemoStep:
    """One step of the session as shown: who said what, and how long it took."""

    kind: str  # "event", "ask" or "reply"
    text: str
    seconds: float = 0.0
    note: str = ""


def run_session(
    http_url: str, conversation: str = CONVERSATION, token: str | None = None
) -> list[DemoStep]:
    """Play :data:`SESSION` against a running worker; raises on any HTTP error.

    ``token`` is one of the worker's bearer tokens, when it has any.
    """
    base = f"{http_url}/v1/conversations/{conversation}"
    steps: list[DemoStep] = []
    for kind, text in SESSION:
        started = time.perf_counter()
        if kind == "event":
            post(f"{base}/events", {"text": text, "kind": "game"}, token)
            steps.append(DemoStep("event", text, time.perf_counter() - started))
            continue
        steps.append(DemoStep("ask", text))
        body = {"text": text, "timeout": 60}
        note = ""
        if kind == "stream":
            reply, pieces, first = post_streamed(f"{base}/messages", body, token)
            note = f"streamed in {pieces} pieces, the first after {first - started:.2f} s"
        else:
            reply = post(f"{base}/messages", body, token)
        failed = reply.get("error")
        shown = f"({failed.get('message')})" if isinstance(failed, dict) else reply.get("text")
        steps.append(DemoStep("reply", str(shown), time.perf_counter() - started, note))
    return steps


def post_streamed(
    url: str, body: dict[str, Any], token: str | None = None
) -> tuple[dict[str, Any], int, float]:
    """POST an ask for Server-Sent Events: its last event's data (the reply, or the
    error), how many text pieces came, and when the first one did."""
    request = urllib.request.Request(
        url,
        data=json.dumps(body).encode(),
        method="POST",
        headers={**_headers(token), "Accept": "text/event-stream"},
    )
    pieces, first, event, last = 0, 0.0, "", {}
    with urllib.request.urlopen(request, timeout=90) as response:
        for line in response:
            if line.startswith(b"event: "):
                event = line[len(b"event: ") :].strip().decode()
            elif line.startswith(b"data: "):
                last = json.loads(line[len(b"data: ") :])
                if event == "delta":
                    pieces += 1
                    first = first or time.perf_counter()
    return last, pieces, first


def _headers(token: str | None) -> dict[str, str]:
    headers = {"Content-Type": "application/json"}
    if token is not None:
        headers["Authorization"] = f"Bearer {token}"
    return headers


def wait_ready(http_url: str, timeout: float = 90.0, pause: Pause = time.sleep) -> None:
    """Wait until the worker's web server answers and owns its partitions (``/ready``)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            urllib.request.urlopen(f"{http_url}/ready", timeout=5)
            return
        except OSError:  # not listening yet, or 503 while partitions are assigned
            pass
        pause(0.3)
    raise RuntimeError(f"the store worker's HTTP server at {http_url} did not answer")


def post(url: str, body: dict[str, Any], token: str | None = None) -> dict[str, Any]:
    """POST JSON and return the JSON answer; errors with a status other than 2xx/502/504."""
    request = urllib.request.Request(
        url, data=json.dumps(body).encode(), method="POST", headers=_headers(token)
    )
    try:
        with urllib.request.urlopen(request, timeout=90) as response:
            answer: dict[str, Any] = json.loads(response.read())
            return answer
    except urllib.error.HTTPError as err:
        detail = err.read().decode(errors="replace")
        if err.code in (502, 504):  # a reply with status error or timeout
            failed: dict[str, Any] = json.loads(detail)
            return failed
        raise RuntimeError(f"POST {url}: HTTP {err.code}: {detail[:300]}") from None
