"""The error and token middlewares on a real aiohttp server: every error is JSON, a crash
says nothing of itself, and tokens are compared, never shown."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient, TestServer

from goaicore_store.http import BearerTokens, bearer_auth, json_errors
from goaicore_store.http.errors import ApiError

TOKEN = "a-long-random-token-0123456789"


async def crash(request: web.Request) -> web.Response:
    raise RuntimeError("database password is hunter2")


async def refuse(request: web.Request) -> web.Response:
    raise ApiError(422, "not that", field="text")


async def echo(request: web.Request) -> web.Response:
    return web.json_response({"read": len(await request.read())})


@pytest.fixture
async def client() -> AsyncIterator[TestClient[web.Request, web.Application]]:
    app = web.Application(
        middlewares=[json_errors, bearer_auth(BearerTokens([TOKEN]))], client_max_size=1024
    )
    app.router.add_get("/crash", crash)
    app.router.add_get("/refuse", refuse)
    app.router.add_post("/echo", echo)
    app.router.add_get("/health", echo)
    async with TestClient(TestServer(app)) as test_client:
        yield test_client


AUTH = {"Authorization": f"Bearer {TOKEN}"}


async def test_an_unexpected_exception_is_a_json_500_that_tells_nothing_of_it(
    client: TestClient[web.Request, web.Application], caplog: pytest.LogCaptureFixture
) -> None:
    answer = await client.get("/crash", headers=AUTH)
    assert answer.status == 500
    body = await answer.json()
    assert body["error"]["type"] == "internal"
    assert "hunter2" not in await answer.text()
    assert "GET /crash failed" in caplog.text  # the log has it, for the operator


async def test_api_errors_404_405_and_413_are_json(
    client: TestClient[web.Request, web.Application],
) -> None:
    refused = await client.get("/refuse", headers=AUTH)
    assert (refused.status, await refused.json()) == (
        422,
        {"error": {"type": "rejected", "message": "not that", "field": "text"}},
    )
    missing = await client.get("/nowhere", headers=AUTH)
    assert missing.status == 404
    assert (await missing.json())["error"]["type"] == "not_found"
    wrong = await client.delete("/echo", headers=AUTH)
    assert wrong.status == 405
    assert wrong.headers["Allow"] == "POST"
    assert (await wrong.json())["error"]["type"] == "method_not_allowed"
    big = await client.post("/echo", data=b"x" * 2048, headers=AUTH)
    assert big.status == 413
    assert (await big.json())["error"]["type"] == "payload_too_large"
    small = await client.post("/echo", data=b"x" * 10, headers=AUTH)
    assert await small.json() == {"read": 10}


async def test_tokens_guard_all_but_the_probes(
    client: TestClient[web.Request, web.Application],
) -> None:
    assert (await client.get("/health")).status == 200
    for headers in ({}, {"Authorization": "Bearer nope"}, {"Authorization": TOKEN}):
        answer = await client.post("/echo", data=b"x", headers=headers)
        assert answer.status == 401
        assert answer.headers["WWW-Authenticate"] == 'Bearer realm="goaicore"'
    assert (await client.post("/echo", data=b"x", headers=AUTH)).status == 200
    lower = {"Authorization": f"bearer  {TOKEN} "}
    assert (await client.post("/echo", data=b"x", headers=lower)).status == 200


def test_tokens_are_never_shown() -> None:
    tokens = BearerTokens([TOKEN, TOKEN + "2"])
    assert repr(tokens) == str(tokens) == "BearerTokens(2 tokens)"
    assert not BearerTokens([])
