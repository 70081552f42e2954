"""Forwarding to the owner of a conversation when the owner is gone: two workers on Apache
Kafka, one killed; the other answers 503 with Retry-After for the dead one's
conversations (never a 500), and serves them once their partitions are its own."""

from __future__ import annotations

import json
import re
import time
import urllib.error
import urllib.request
from collections.abc import Iterator

import pytest

from goaicore.config import Settings
from goaicore.devstack.demo import wait_ready
from goaicore.testing import OpenAIServer
from tests.chat_agent.conftest import llm, model, topics
from tests.chat_agent.helpers import ChatWorker, llm_env
from tests.http.conftest import TOKENS

__all__ = ["llm", "model", "topics"]

CONVERSATIONS = [f"owned-{n}" for n in range(16)]


@pytest.fixture
def survivor_and_victim(
    topics: Settings, llm: OpenAIServer
) -> Iterator[tuple[ChatWorker, ChatWorker]]:
    env = llm_env(llm, GOAICORE_HTTP_TOKENS=",".join(TOKENS))
    survivor = ChatWorker(topics, "survivor", **env).start()
    victim = ChatWorker(topics, "victim", **env).start()
    try:
        wait_ready(survivor.url)
        wait_ready(victim.url)
        yield survivor, victim
    finally:
        victim.stop()
        survivor.stop()


def _get(url: str) -> tuple[int, dict[str, str], dict[str, object]]:
    request = urllib.request.Request(url, headers={"Authorization": f"Bearer {TOKENS[0]}"})
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            return response.status, dict(response.headers), json.loads(response.read())
    except urllib.error.HTTPError as err:
        return err.code, dict(err.headers), json.loads(err.read())


def test_a_dead_owner_is_a_503_with_retry_after_until_its_partitions_move(
    survivor_and_victim: tuple[ChatWorker, ChatWorker],
) -> None:
    survivor, victim = survivor_and_victim
    # Both workers answer the same before: each conversation is new (404), wherever it is.
    for conversation in CONVERSATIONS:
        status, _, answer = _get(f"{survivor.url}/v1/conversations/{conversation}")
        assert status == 404, answer
    victim.kill9()  # its partitions stay its own until the group's session times out
    answers = {c: _get(f"{survivor.url}/v1/conversations/{c}") for c in CONVERSATIONS}
    assert {status for status, _, _ in answers.values()} == {404, 503}, answers
    for status, headers, answer in answers.values():
        if status == 503:
            assert headers["Retry-After"] == "5"
            error = answer["error"]
            assert isinstance(error, dict)
            assert error["type"] == "unavailable"
            assert "cannot be reached" in error["message"]
            assert "retry" in error["message"]
    # Once the group gives the dead worker's partitions to the survivor, it serves them.
    deadline = time.monotonic() + 240
    while time.monotonic() < deadline:
        statuses = {_get(f"{survivor.url}/v1/conversations/{c}")[0] for c in CONVERSATIONS}
        assert 500 not in statuses
        if statuses == {404}:
            break
        time.sleep(1)
    else:
        raise AssertionError(f"the survivor never took the partitions over: {statuses}")
    assert not re.search(r"HTTP GET \S+ failed", survivor.log())  # no 500 was logged
