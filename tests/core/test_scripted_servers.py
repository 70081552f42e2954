"""The scripted OpenAI / Anthropic servers themselves (reused by later test suites)."""

from __future__ import annotations

import json
import threading
import time
import urllib.error
import urllib.request
from typing import Any

import pytest

from goaicore.testing import (
    AnthropicServer,
    OpenAIServer,
    RecordedRequest,
    ScriptedResponse,
    anthropic_echo,
    openai_echo,
    openai_reply,
)


def post(url: str, body: Any) -> tuple[int, Any]:
    request = urllib.request.Request(
        url, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"}
    )
    try:
        with urllib.request.urlopen(request, timeout=5) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as err:
        return err.code, json.loads(err.read())


def test_queue_then_responder_then_unexpected() -> None:
    with OpenAIServer([openai_reply("first")]) as server:
        url = f"{server.base_url}/chat/completions"
        status, body = post(url, {"messages": [{"role": "user", "content": "a"}]})
        assert status == 200
        assert body["choices"][0]["message"]["content"] == "first"
        status, body = post(url, {"messages": []})
        assert status == 500
        assert body["error"]["message"] == "no scripted response left"
        assert server.unexpected == 1
        server.responder = openai_echo
        status, body = post(url, {"messages": [{"role": "user", "content": "ping"}]})
        assert body["choices"][0]["message"]["content"] == "echo: ping"
        assert [r.body for r in server.requests] == server.bodies
        assert len(server.bodies) == 3
        assert server.pending == 0


def test_unknown_paths_are_404_and_not_recorded() -> None:
    with AnthropicServer() as server:
        status, _ = post(f"{server.url}/v1/other", {})
        assert status == 404
        assert server.requests == []


def test_a_callable_responder_sees_the_request() -> None:
    seen: list[RecordedRequest] = []

    def responder(request: RecordedRequest) -> ScriptedResponse:
        seen.append(request)
        return anthropic_echo(request)

    with AnthropicServer(responder=responder) as server:
        status, body = post(
            f"{server.base_url}/v1/messages",
            {"messages": [{"role": "user", "content": [{"type": "text", "text": "yo"}]}]},
        )
        assert status == 200
        assert body["content"][0]["text"] == "echo: yo"
        assert seen[0].path == "/v1/messages"
        assert seen[0].method == "POST"


def test_delays_are_applied_and_cut_short_by_stop() -> None:
    server = OpenAIServer([openai_reply("slow", delay=0.3)]).start()
    started = time.perf_counter()
    post(f"{server.base_url}/chat/completions", {})
    assert time.perf_counter() - started >= 0.3
    server.add(openai_reply("never", delay=30))
    stopped = time.perf_counter()
    request = urllib.request.Request(f"{server.base_url}/chat/completions", data=b"{}")
    threading.Timer(0.2, server.stop).start()
    with pytest.raises(OSError):  # noqa: PT011 - the connection is dropped unanswered
        urllib.request.urlopen(request, timeout=5)
    assert time.perf_counter() - stopped < 3


def test_url_needs_a_running_server() -> None:
    with pytest.raises(RuntimeError, match="not running"):
        _ = OpenAIServer().url
