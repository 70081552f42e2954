"""The HTTP API over real HTTP, on two workers that share the partitions and need a token."""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.parse
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from goaicore.config import Settings
from goaicore.records.avro.api import decode_chat_reply, decode_chat_request
from goaicore.testing import OpenAIServer
from tests.chat_agent.helpers import ChatWorker, http
from tests.http.conftest import TOKENS
from tests.tracing import new_traceparent, records_when, trace_of

CONVERSATIONS = [f"web-{n}" for n in range(8)]
Pair = tuple[ChatWorker, ChatWorker]


def call(method: str, url: str, body: Any = None, **options: Any) -> tuple[int, Any]:
    """``http`` with the first token."""
    return http(method, url, body, token=options.pop("token", TOKENS[0]), **options)


def _settled(workers: Pair, conversation: str, messages: int = 1) -> None:
    """Wait until both workers serve ``conversation``'s snapshot with ``messages`` messages."""
    deadline = time.monotonic() + 90
    answers: list[tuple[int, Any]] = []
    while time.monotonic() < deadline:
        answers = [call("GET", f"{w.url}/v1/conversations/{conversation}") for w in workers]
        served = all(s == 200 and len(a["messages"]) >= messages for s, a in answers)
        if served and answers[0][1] == answers[1][1]:
            return
        time.sleep(0.3)
    raise AssertionError(f"workers did not settle on {conversation}: {answers}")


def test_events_messages_and_snapshots_through_either_worker(pair: Pair, llm: OpenAIServer) -> None:
    second = pair[1]
    for n, conversation in enumerate(CONVERSATIONS):
        status, answer = call(
            "POST",
            f"{pair[n % 2].url}/v1/conversations/{conversation}/events",
            {"text": f"Player {n} checked in", "kind": "check-in", "attributes": {"n": str(n)}},
            token=TOKENS[n % 2],  # either token, on either worker
        )
        assert status == 201, answer
        assert answer["offset"] >= 0
    for conversation in CONVERSATIONS:
        _settled(pair, conversation)
    # Asked through both workers: the one that does not own a conversation forwards,
    # with the caller's token.
    for n, conversation in enumerate(CONVERSATIONS):
        status, reply = call(
            "POST",
            f"{pair[(n + 1) % 2].url}/v1/conversations/{conversation}/messages",
            {"text": f"hello {n}", "system": "Be brief", "timeout": 30},
        )
        assert status == 200, reply
        assert (reply["status"], reply["text"]) == ("ok", f"echo: hello {n}")
        assert reply["conversation_id"] == conversation
        body = next(b for b in llm.bodies if b["messages"][-1].get("content") == f"hello {n}")
        assert {"role": "system", "content": f"Player {n} checked in"} in body["messages"]
    for conversation in CONVERSATIONS:
        _settled(pair, conversation, messages=3)
        status, snapshot = call("GET", f"{second.url}/v1/conversations/{conversation}")
        assert status == 200
        assert [m["role"] for m in snapshot["messages"]] == ["system", "user", "assistant"]
        assert snapshot["messages"][0]["name"] == "check-in"


def test_a_retry_with_the_same_request_id_gets_the_same_reply(
    pair: Pair, llm: OpenAIServer
) -> None:
    body = {"text": "once over http", "request_id": "http-retry-1"}
    first = call("POST", f"{pair[0].url}/v1/conversations/web-retry/messages", body)
    second = call("POST", f"{pair[1].url}/v1/conversations/web-retry/messages", body)
    assert first == second
    assert first[0] == 200
    assert len([b for b in llm.bodies if b["messages"][-1].get("content") == "once over http"]) == 1


def test_an_ask_keeps_its_callers_trace_through_the_worker_that_forwards_it(
    pair: Pair, topics: Settings
) -> None:
    """Asked through both workers, so one of them forwards it to the owner."""
    traces = {}
    for n, worker in enumerate(pair):
        traceparent, traces[f"traced-fwd-{n}"] = new_traceparent()
        status, reply = call(
            "POST",
            f"{worker.url}/v1/conversations/web-traced/messages",
            {"text": f"traced {n}", "request_id": f"traced-fwd-{n}"},
            extra_headers={"traceparent": traceparent},
        )
        assert status == 200, reply
    requests = records_when(topics, topics.topic("requests"), "web-traced", 2)
    replies = records_when(topics, topics.topic("replies"), "web-traced", 2)
    assert {decode_chat_request(r.value).request_id: trace_of(r) for r in requests} == traces
    assert {decode_chat_reply(r.value).request_id: trace_of(r) for r in replies} == traces


@pytest.mark.parametrize(
    ("path", "raw", "status", "field", "says"),
    [
        ("messages", b"{not json", 400, None, "not valid JSON"),
        ("messages", b"[1, 2]", 400, None, "must be a JSON object"),
        ("messages", b'{"text": 5}', 400, "text", "text must be a string"),
        ("messages", b"{}", 400, "text", "text is missing"),
        ("messages", b'{"text": "  "}', 400, "text", "text must not be empty"),
        ("messages", b'{"text": "hi", "timeout": "soon"}', 400, "timeout", "must be a number"),
        ("messages", b'{"text": "hi", "timeout": 0}', 400, "timeout", "more than 0"),
        ("messages", b'{"text": "hi", "tools": "score_lookup"}', 400, "tools", "tool names"),
        ("messages", b'{"text": "hi", "system": 3}', 400, "system", "system must be a string"),
        ("messages", b'{"text": "hi", "request_id": ""}', 400, "request_id", "must not be empty"),
        ("messages", b'{"text": "hi", "requestid": "r1"}', 400, "requestid", "'requestid'"),
        ("events", b'{"text": "x", "type": "spell"}', 400, "type", "'game' or 'user'"),
        ("events", b'{"text": "x", "attributes": {"a": 1}}', 400, "attributes", "must map"),
        ("events", b'{"kind": "x"}', 400, "text", "text is missing"),
        ("events", b'{"text": "x", "colour": "red"}', 400, "colour", "unknown field 'colour'"),
        ("events", b'{"text": "\\ud800"}', 400, "text", "text is not valid UTF-8 text"),
        ("events", b'{"text": "x", "kind": "\\udcff"}', 400, "kind", "not valid UTF-8"),
        ("events", b'{"text": "x", "attributes": {"a": "\\ud800"}}', 400, "attributes", "UTF-8"),
        ("messages", b'{"text": "a\\ud800"}', 400, "text", "character 1 is a lone surrogate"),
        ("messages", b'{"text": "hi", "system": "\\udfff"}', 400, "system", "not valid UTF-8"),
    ],
)
def test_bad_input_gets_a_json_error_naming_the_field(
    pair: Pair, path: str, raw: bytes, status: int, field: str | None, says: str
) -> None:
    got, answer = call("POST", f"{pair[0].url}/v1/conversations/web-bad/{path}", raw=raw)
    assert got == status, answer
    error = answer["error"]
    assert error["type"] == "invalid_request"
    assert says in error["message"], answer
    assert error.get("field") == field


def test_a_rejected_turn_is_an_error_with_its_reply_beside_it(pair: Pair) -> None:
    got, answer = call(
        "POST",
        f"{pair[0].url}/v1/conversations/web-bad/messages",
        {"text": "hi", "tools": ["teleport"]},
    )
    assert got == 422, answer
    assert answer["error"]["type"] == "rejected"
    assert "teleport" in answer["error"]["message"]
    assert answer["reply"]["status"] == "rejected"
    assert answer["error"]["request_id"] == answer["reply"]["request_id"]


def test_a_late_request_is_run_by_its_retry_as_its_504_advises(pair: Pair) -> None:
    late = {"text": "late hello", "request_id": "web-late-1", "timeout": 5.96e-08}
    status, answer = call("POST", f"{pair[0].url}/v1/conversations/web-late/messages", late)
    assert (status, answer["error"]["type"]) == (504, "timeout"), answer
    # Turns run in order: once this one is answered, the late request's reply is out.
    status, _ = call("POST", f"{pair[1].url}/v1/conversations/web-late/messages", {"text": "next"})
    assert status == 200
    retry = {**late, "timeout": 30}
    status, reply = call("POST", f"{pair[1].url}/v1/conversations/web-late/messages", retry)
    assert (status, reply["text"]) == (200, "echo: late hello"), reply


def test_a_retry_sent_before_its_late_original_is_handled_gets_its_own_answer(
    pair: Pair,
) -> None:
    """A turn holds the conversation; meanwhile an ask times out (504) and is retried at
    once with its request id, through the other worker. The original is handled after the
    slow turn, too late: its "timeout" is not final and answers only its own record, so
    the retry waits for its turn and gets its answer."""
    base = "/v1/conversations/web-late-race/messages"
    with ThreadPoolExecutor(1) as pool:
        busy = pool.submit(call, "POST", f"{pair[0].url}{base}", {"text": "slow 8", "timeout": 60})
        time.sleep(0.5)  # the slow turn runs; what follows waits behind it
        late = {"text": "late question", "request_id": "web-late-race-1", "timeout": 1}
        status, answer = call("POST", f"{pair[0].url}{base}", late)
        assert (status, answer["error"]["type"]) == (504, "timeout"), answer
        assert not busy.done(), "the slow turn ended before the retry: make it slower"
        status, reply = call("POST", f"{pair[1].url}{base}", {**late, "timeout": 60})
        assert (status, reply.get("text")) == (200, "echo: late question"), reply
        assert busy.result()[0] == 200


def test_an_ask_after_erasure_or_deletion_is_410_or_409_and_never_reaches_the_llm(
    pair: Pair, llm: OpenAIServer
) -> None:
    first, second = pair
    base = "/v1/conversations/web-gone"
    asked = {"text": "my secret plan", "request_id": "web-gone-1"}
    status, reply = call("POST", f"{first.url}{base}/messages", asked)
    assert (status, reply["text"]) == (200, "echo: my secret plan"), reply
    status, answer = call("POST", f"{second.url}{base}/erase", {"reason": "asked"})
    assert status == 200, answer
    status, answer = call("POST", f"{second.url}{base}/messages", asked)
    assert (status, answer["error"]["type"]) == (410, "gone"), answer
    assert "erased" in answer["error"]["message"]
    assert answer["reply"]["status"] == "rejected"
    assert "my secret plan" not in str(answer)
    status, answer = call("DELETE", f"{first.url}{base}")
    assert status == 200, answer
    status, answer = call("POST", f"{second.url}{base}/messages", {"text": "are you there?"})
    assert (status, answer["error"]["type"]) == (409, "conflict"), answer
    assert "was deleted" in answer["error"]["message"]
    assert answer["reply"]["status"] == "rejected"
    sent = [b["messages"][-1].get("content") for b in llm.bodies]
    assert sent.count("my secret plan") == 1
    assert "are you there?" not in sent


def test_a_cancel_is_placed_by_its_request_or_conversation_and_refuses_bad_input(
    pair: Pair,
) -> None:
    url = f"{pair[0].url}/v1/requests"
    status, answer = call("DELETE", f"{url}/never-asked")
    assert (status, answer["error"]["type"]) == (404, "not_found"), answer
    assert "conversation_id" in answer["error"]["message"]
    # A request asked with its id through either worker is placed without one.
    status, _ = call(
        "POST",
        f"{pair[1].url}/v1/conversations/web-cancel/messages",
        {"text": "hi", "request_id": "c-1"},
    )
    assert status == 200
    status, answer = call("DELETE", f"{url}/c-1")
    assert status == 202, answer
    assert answer["cancel"] == "sent"
    status, answer = call("DELETE", f"{url}/c-2?conversation_id=web-cancel")
    assert (status, answer) == (
        202,
        {"request_id": "c-2", "conversation_id": "web-cancel", "cancel": "sent"},
    )
    for bad in ("c-1?conversation_id=", "c-1?conversation_id=%20", "%20", "c-1?conversation=x"):
        status, answer = call("DELETE", f"{url}/{bad}")
        assert (status, answer["error"]["type"]) == (400, "invalid_request"), bad


def test_oversized_bodies_unknown_routes_methods_and_conversations(
    pair: Pair, topics: Settings
) -> None:
    url = pair[0].url
    huge = b'{"text": "' + b"x" * (topics.max_record_bytes + 10) + b'"}'
    for path in ("messages", "events"):
        status, answer = call("POST", f"{url}/v1/conversations/web-big/{path}", raw=huge)
        assert status == 413
        assert answer["error"]["type"] == "payload_too_large"
        assert "at most" in answer["error"]["message"]
    status, answer = call("GET", f"{url}/v1/conversations/nobody-here")
    assert (status, answer["error"]["type"]) == (404, "not_found")
    assert "no conversation" in answer["error"]["message"]
    status, answer = call("GET", f"{url}/v1/conversations/{'x' * 300}")
    assert status == 400
    assert "at most 256" in answer["error"]["message"]
    # The routes before /v1 are gone; Faust's own pages are off.
    for old in ("/conversations/nobody-here", "/router/", "/table/snapshots/", "/", "/stats/"):
        status, answer = call("GET", f"{url}{old}")
        assert (status, answer["error"]["type"]) == (404, "not_found"), old
        assert "/v1" in answer["error"]["message"]
    status, answer = call("PUT", f"{url}/v1/conversations/web-big")
    assert (status, answer["error"]["type"]) == (405, "method_not_allowed")
    assert "GET" in answer["error"]["message"]
    assert "DELETE" in answer["error"]["message"]


def test_history_operations_through_either_worker(pair: Pair, llm: OpenAIServer) -> None:
    first, second = pair
    base = "/v1/conversations/web-ops"
    for n, question in enumerate(["one", "two"]):
        status, reply = call("POST", f"{pair[n % 2].url}{base}/messages", {"text": question})
        assert (status, reply["text"]) == (200, f"echo: {question}")
    status, regenerated = call("POST", f"{second.url}{base}/regenerate", {"timeout": 30})
    assert (status, regenerated["text"]) == (200, "echo: two"), regenerated
    status, undone = call("POST", f"{first.url}{base}/undo")
    assert (status, undone["text"], undone["messages"]) == (200, "two", 2), undone
    status, forked = call(
        "POST", f"{second.url}{base}/fork", {"to": "web-ops-fork", "before_offset": 0}
    )
    assert (status, forked["conversation_id"], forked["messages"]) == (201, "web-ops-fork", 0)
    status, answer = call("POST", f"{first.url}{base}/fork", {"to": "web-ops-fork"})
    assert (status, answer["error"]["type"]) == (409, "conflict"), answer
    status, position = call(
        "PATCH",
        f"{first.url}{base}/metadata",
        {"title": "Ops", "tags": ["x"], "attributes": {"k": "v", "gone": None}},
    )
    assert status == 200, position
    assert position["offset"] >= 0
    status, rewound = call("POST", f"{second.url}{base}/rewind", {"until_offset": -1})
    assert (status, rewound["messages"]) == (200, 0), rewound
    deadline = time.monotonic() + 60
    while True:
        status, snapshot = call("GET", f"{second.url}{base}")
        if status == 200 and snapshot["events_by_type"].get("ConversationRewound") == 3:
            break
        assert time.monotonic() < deadline, snapshot
        time.sleep(0.3)
    assert (snapshot["messages"], snapshot["title"], snapshot["tags"]) == ([], "Ops", ["x"])
    assert snapshot["attributes"] == {"k": "v"}
    fork = "/v1/conversations/web-ops-fork"
    status, position = call("DELETE", f"{second.url}{fork}", {"reason": "player asked"})
    assert status == 200, position
    status, answer = call("DELETE", f"{first.url}{fork}")
    assert (status, answer["error"]["type"]) == (409, "conflict"), answer
    assert "deleted" in answer["error"]["message"]
    deadline = time.monotonic() + 60
    while True:
        status, snapshot = call("GET", f"{first.url}{fork}")
        if status == 200 and snapshot["deleted"]:
            break
        assert time.monotonic() < deadline, snapshot
        time.sleep(0.3)
    assert snapshot["messages"] == []


@pytest.mark.parametrize(
    ("method", "path", "body", "status", "field"),
    [
        ("POST", "never-asked/undo", None, 404, None),
        ("POST", "web-ops/rewind", {}, 400, "until_offset"),
        ("POST", "web-ops/rewind", {"until_offset": "3"}, 400, "until_offset"),
        ("POST", "web-ops/fork", {"to": " "}, 400, "to"),
        ("POST", "web-ops/fork", {"to": "x", "as_of": "yesterday"}, 400, "as_of"),
        ("POST", "web-ops/fork", {"to": "x", "as_of": "2026-01-01T00:00:00"}, 400, "as_of"),
        ("PATCH", "web-ops/metadata", {"tags": "x"}, 400, "tags"),
        ("PATCH", "web-ops/metadata", {"title": "t" * 201}, 400, None),
        ("PATCH", "web-ops/metadata", {"colour": "red"}, 400, "colour"),
        ("DELETE", "never-asked", None, 404, None),
        ("DELETE", "web-ops", {"reason": 3}, 400, "reason"),
        ("DELETE", "web-ops", {"why": "x"}, 400, "why"),
    ],
)
def test_history_operations_refuse_bad_input_with_the_reason(
    pair: Pair, method: str, path: str, body: Any, status: int, field: str | None
) -> None:
    answer_status, answer = call(method, f"{pair[0].url}/v1/conversations/{path}", body)
    assert answer_status == status, answer
    assert answer["error"].get("field") == field


BAD_IDS = ["nulx%00y", "tab%09id", "del%7Fid", "c1%C2%85id", "ls%E2%80%A8id"]
ID_ROUTES = [
    ("GET", "", None),
    ("DELETE", "", {}),
    ("POST", "/events", {"text": "must not land"}),
    ("POST", "/messages", {"text": "must not run"}),
    ("POST", "/undo", {}),
    ("POST", "/regenerate", {}),
    ("POST", "/rewind", {"until_offset": 0}),
    ("POST", "/fork", {"to": "fork-of-a-bad-id"}),
    ("PATCH", "/metadata", {"title": "t"}),
    ("POST", "/erase", {}),
]


@pytest.mark.parametrize("bad", BAD_IDS)
@pytest.mark.parametrize(
    ("method", "suffix", "body"), ID_ROUTES, ids=[f"{m} {s or '/'}" for m, s, _ in ID_ROUTES]
)
def test_a_conversation_id_with_a_control_character_is_a_400_on_every_route(
    pair: Pair, bad: str, method: str, suffix: str, body: Any
) -> None:
    status, answer = call(method, f"{pair[0].url}/v1/conversations/{bad}{suffix}", body)
    assert status == 400, answer
    assert answer["error"]["type"] == "invalid_request"
    assert "conversation_id holds U+" in answer["error"]["message"]


@pytest.mark.parametrize("bad", BAD_IDS)
def test_a_bad_conversation_id_in_a_body_or_query_is_a_400(pair: Pair, bad: str) -> None:
    raw = urllib.parse.unquote(bad)
    status, answer = call("POST", f"{pair[1].url}/v1/conversations/fork-src/fork", {"to": raw})
    assert (status, answer["error"].get("field")) == (400, "to"), answer
    status, answer = call("DELETE", f"{pair[1].url}/v1/requests/r-1?conversation_id={bad}")
    assert status == 400, answer


def test_ids_differing_in_nul_and_u_fffd_stay_two_conversations(pair: Pair) -> None:
    kept = "nulx\ufffdy"
    status, answer = call("POST", f"{pair[0].url}/v1/conversations/nulx%00y/events", {"text": "a"})
    assert status == 400, answer
    quoted = urllib.parse.quote(kept)
    status, answer = call("POST", f"{pair[1].url}/v1/conversations/{quoted}/events", {"text": "b"})
    assert status == 201, answer
    _settled(pair, quoted)
    status, snapshot = call("GET", f"{pair[0].url}/v1/conversations/{quoted}")
    assert (status, snapshot["conversation_id"], snapshot["event_count"]) == (200, kept, 1)


def _with_header(method: str, url: str, body: Any, header: str) -> tuple[int, Any]:
    """``call``, with a forwarding header as a client might send it."""
    data = None if body is None else json.dumps(body).encode()
    headers = {
        "Authorization": f"Bearer {TOKENS[0]}",
        "Content-Type": "application/json",
        "X-Goaicore-Forwarded": header,
    }
    request = urllib.request.Request(url, data=data, method=method, headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as err:
        return err.code, json.loads(err.read())


@pytest.mark.parametrize("header", ["1", "1700000000.0123abcd", f"{2**40}.x"])
def test_a_clients_forwarding_header_is_ignored(pair: Pair, header: str) -> None:
    conversations = [f"forged-{n}" for n in range(6)]
    for conversation in conversations:
        status, answer = call(
            "POST", f"{pair[0].url}/v1/conversations/{conversation}/events", {"text": "here"}
        )
        assert status == 201, answer
    for conversation in conversations:
        _settled(pair, conversation)
    # Each conversation through both workers: one of them is not its owner, and must
    # forward it as any request instead of serving it where the client's header lands.
    for worker in pair:
        for conversation in conversations:
            url = f"{worker.url}/v1/conversations/{conversation}"
            status, snapshot = _with_header("GET", url, None, header)
            assert (status, snapshot.get("conversation_id")) == (200, conversation), snapshot
            asked = {"text": f"forged {header} {conversation}", "timeout": 30}
            status, reply = _with_header("POST", f"{url}/messages", asked, header)
            assert status == 200, reply
            assert reply["text"] == f"echo: forged {header} {conversation}"
