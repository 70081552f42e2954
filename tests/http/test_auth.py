"""Bearer tokens: every route but the probes needs one; the probes stay open."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from pathlib import Path

import psutil
import pytest

from goaicore.config import Settings
from goaicore.errors import ConfigError
from goaicore.http_auth import check_http_exposure
from tests.chat_agent.helpers import ChatWorker, http
from tests.cli import run_goaicore
from tests.http.conftest import TOKENS
from tests.raw_http import raw_request
from tests.store.workers import worker_env

Pair = tuple[ChatWorker, ChatWorker]
PROTECTED = [
    ("GET", "/v1/conversations/anyone"),
    ("POST", "/v1/conversations/anyone/events"),
    ("POST", "/v1/conversations/anyone/messages"),
    ("DELETE", "/v1/requests/anyone?conversation_id=anyone"),
    ("GET", "/v1/openapi.json"),
    ("GET", "/no/such/route"),
]


@pytest.mark.parametrize(("method", "path"), PROTECTED, ids=[" ".join(p) for p in PROTECTED])
@pytest.mark.parametrize(
    "token", [None, "wrong-token-0123456789abcdef", TOKENS[0][:-1], TOKENS[0] + "x"]
)
def test_a_request_without_an_accepted_token_is_401_and_changes_nothing(
    pair: Pair, method: str, path: str, token: str | None
) -> None:
    body = {"text": "must not land"} if method == "POST" else None
    status, answer = http(method, f"{pair[0].url}{path}", body, token=token)
    assert status == 401
    assert answer["error"]["type"] == "unauthorized"
    assert "Bearer" in answer["error"]["message"]
    assert TOKENS[0] not in answer["error"]["message"]


@pytest.mark.parametrize(
    "authorization",
    [b"Bearer \xff\xfe-not-utf8", b"\xc3\x28 token", b"Bearer " + TOKENS[0].encode() + b"\x80"],
)
def test_an_authorization_header_that_is_not_utf8_is_a_401_not_a_crash(
    pair: Pair, authorization: bytes
) -> None:
    worker = pair[0]
    before = worker.log().count("Traceback")
    status, body = raw_request(
        worker.web_port, "GET", "/v1/conversations/anyone", [b"Authorization: " + authorization]
    )
    assert status == 401, body
    assert json.loads(body)["error"]["type"] == "unauthorized"
    assert worker.log().count("Traceback") == before


def test_the_challenge_header_and_other_schemes(pair: Pair) -> None:
    request = urllib.request.Request(
        f"{pair[0].url}/v1/conversations/anyone", headers={"Authorization": f"Basic {TOKENS[0]}"}
    )
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(request, timeout=30)
    assert refused.value.code == 401
    assert refused.value.headers["WWW-Authenticate"] == 'Bearer realm="goaicore"'


def test_probes_are_open_and_every_token_is_accepted(pair: Pair) -> None:
    for worker in pair:
        assert http("GET", f"{worker.url}/health") == (200, {"status": "ok"})
        assert http("GET", f"{worker.url}/ready")[0] in (200, 503)
        for token in TOKENS:
            status, _ = http("GET", f"{worker.url}/v1/openapi.json", token=token)
            assert status == 200


def test_a_worker_listens_on_the_web_host_alone(pair: Pair) -> None:
    for worker in pair:
        assert worker.process is not None
        listening = {
            c.laddr.ip
            for c in psutil.Process(worker.process.pid).net_connections(kind="inet")
            if c.status == psutil.CONN_LISTEN and c.laddr.port == worker.web_port
        }
        assert listening == {"127.0.0.1"}


def test_without_tokens_a_worker_refuses_an_address_other_machines_reach(
    topics: Settings,
) -> None:
    env = {**worker_env(topics), "GOAICORE_HTTP_TOKENS": ""}
    done = run_goaicore("worker", "--web-host", "0.0.0.0", env=env, timeout=60)
    assert done.returncode == 3
    assert "goaicore worker: Settings(" in done.stdout  # what it was started with
    [line] = done.stderr.strip().splitlines()  # and why it stops
    assert line.startswith("goaicore: GOAICORE_HTTP_TOKENS is not set and --web-host 0.0.0.0")
    assert "--insecure-http" in line


@pytest.mark.parametrize(
    ("host", "tokens", "insecure", "refused"),
    [
        ("127.0.0.1", (), False, False),
        ("::1", (), False, False),
        ("localhost", (), False, False),
        ("0.0.0.0", (), False, True),
        ("10.0.0.5", (), False, True),
        ("0.0.0.0", (), True, False),
        ("0.0.0.0", (TOKENS[0],), False, False),
    ],
)
def test_http_exposure_rule(
    host: str, tokens: tuple[str, ...], insecure: bool, refused: bool, tmp_path: Path
) -> None:
    settings = Settings(env={}, http_tokens=tokens, data_dir=tmp_path)
    if refused:
        with pytest.raises(ConfigError, match="GOAICORE_HTTP_TOKENS is not set"):
            check_http_exposure(settings, host, insecure)
    else:
        check_http_exposure(settings, host, insecure)
