"""The HTTP views over real HTTP, on two workers that share the partitions."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest

from goaicore.config import Settings
from goaicore.testing import OpenAIServer
from tests.chat_agent.helpers import ChatWorker, http, llm_env, wait_http

CONVERSATIONS = [f"web-{n}" for n in range(8)]


@pytest.fixture(scope="module")
def pair(topics: Settings, llm: OpenAIServer) -> Iterator[tuple[ChatWorker, ChatWorker]]:
    first = ChatWorker(topics, "first", **llm_env(llm)).start()
    second = ChatWorker(topics, "second", **llm_env(llm)).start()
    try:
        wait_http(first.url)
        wait_http(second.url)
        yield first, second
    finally:
        second.stop()
        first.stop()


def _settled(workers: tuple[ChatWorker, ChatWorker], conversation: str, messages: int = 1) -> None:
    """Wait until both workers serve ``conversation``'s snapshot with ``messages`` messages."""
    deadline = time.monotonic() + 90
    answers: list[tuple[int, Any]] = []
    while time.monotonic() < deadline:
        answers = [http("GET", f"{w.url}/conversations/{conversation}") for w in workers]
        served = all(s == 200 and len(a["messages"]) >= messages for s, a in answers)
        if served and answers[0][1] == answers[1][1]:
            return
        time.sleep(0.3)
    raise AssertionError(f"workers did not settle on {conversation}: {answers}")


def test_events_messages_and_snapshots_through_either_worker(
    pair: tuple[ChatWorker, ChatWorker], llm: OpenAIServer
) -> None:
    second = pair[1]
    for n, conversation in enumerate(CONVERSATIONS):
        status, answer = http(
            "POST",
            f"{pair[n % 2].url}/conversations/{conversation}/events",
            {"text": f"Player {n} checked in", "kind": "check-in", "attributes": {"n": str(n)}},
        )
        assert status == 201, answer
        assert answer["offset"] >= 0
    for conversation in CONVERSATIONS:
        _settled(pair, conversation)
    # Asked through both workers: the one that does not own a conversation forwards.
    for n, conversation in enumerate(CONVERSATIONS):
        status, reply = http(
            "POST",
            f"{pair[(n + 1) % 2].url}/conversations/{conversation}/messages",
            {"text": f"hello {n}", "system": "Be brief", "timeout": 30},
        )
        assert status == 200, reply
        assert (reply["status"], reply["text"]) == ("ok", f"echo: hello {n}")
        assert reply["conversation_id"] == conversation
        body = next(b for b in llm.bodies if b["messages"][-1].get("content") == f"hello {n}")
        assert {"role": "system", "content": f"Player {n} checked in"} in body["messages"]
    for conversation in CONVERSATIONS:
        _settled(pair, conversation, messages=3)
        status, snapshot = http("GET", f"{second.url}/conversations/{conversation}")
        assert status == 200
        assert [m["role"] for m in snapshot["messages"]] == ["system", "user", "assistant"]
        assert snapshot["messages"][0]["name"] == "check-in"


def test_a_retry_with_the_same_request_id_gets_the_same_reply(
    pair: tuple[ChatWorker, ChatWorker], llm: OpenAIServer
) -> None:
    body = {"text": "once over http", "request_id": "http-retry-1"}
    url = f"{pair[0].url}/conversations/web-retry/messages"
    first = http("POST", url, body)
    second = http("POST", f"{pair[1].url}/conversations/web-retry/messages", body)
    assert first == second
    assert first[0] == 200
    assert len([b for b in llm.bodies if b["messages"][-1].get("content") == "once over http"]) == 1


@pytest.mark.parametrize(
    ("path", "raw", "status", "says"),
    [
        ("messages", b"{not json", 400, "not valid JSON"),
        ("messages", b"[1, 2]", 400, "must be a JSON object"),
        ("messages", b'{"text": 5}', 400, "text must be a string"),
        ("messages", b"{}", 400, "text is missing"),
        ("messages", b'{"text": "  "}', 400, "text must not be empty"),
        ("messages", b'{"text": "hi", "timeout": "soon"}', 400, "timeout must be a number"),
        ("messages", b'{"text": "hi", "timeout": 0}', 400, "timeout must be more than 0"),
        ("messages", b'{"text": "hi", "tools": "score_lookup"}', 400, "list of tool names"),
        ("messages", b'{"text": "hi", "system": 3}', 400, "system must be a string"),
        ("messages", b'{"text": "hi", "tools": ["teleport"]}', 422, "teleport"),
        ("events", b'{"text": "x", "type": "spell"}', 400, "type must be 'game' or 'user'"),
        ("events", b'{"text": "x", "attributes": {"a": 1}}', 400, "attributes must map"),
        ("events", b'{"kind": "x"}', 400, "text is missing"),
    ],
)
def test_bad_input_gets_a_json_error(
    pair: tuple[ChatWorker, ChatWorker], path: str, raw: bytes, status: int, says: str
) -> None:
    got, answer = http("POST", f"{pair[0].url}/conversations/web-bad/{path}", raw=raw)
    assert got == status, answer
    text = answer.get("error") or answer.get("text") or ""
    assert says in text, answer


def test_oversized_bodies_unknown_and_bad_conversations(
    pair: tuple[ChatWorker, ChatWorker], topics: Settings
) -> None:
    url = pair[0].url
    huge = b'{"text": "' + b"x" * (topics.max_record_bytes + 10) + b'"}'
    for path in ("messages", "events"):
        status, answer = http("POST", f"{url}/conversations/web-big/{path}", raw=huge)
        assert status == 413
        assert "at most" in answer["error"]
    status, answer = http("GET", f"{url}/conversations/nobody-here")
    assert status == 404
    assert "no conversation" in answer["error"]
    long_id = "x" * 300
    status, answer = http("GET", f"{url}/conversations/{long_id}")
    assert status == 400
    assert "at most 256" in answer["error"]
