"""Two workers with bearer tokens on one broker, a scripted LLM, for the HTTP API's tests.

The module-scoped topics and scripted LLM are the chat agent tests' own fixtures.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from goaicore.config import Settings
from goaicore.devstack.demo import wait_ready
from goaicore.testing import OpenAIServer
from tests.chat_agent.conftest import llm, model, topics
from tests.chat_agent.helpers import ChatWorker, llm_env

__all__ = ["PRICES", "TOKENS", "llm", "model", "pair", "topics"]

TOKENS = ("first-token-0123456789abcdef", "second-token-0123456789abcdef")
# The scripted model's price: 2 USD in, 8 USD out per million tokens.
PRICES = {"openai": {"gpt-test": {"input": 2, "output": 8}}}


@pytest.fixture(scope="module")
def pair(topics: Settings, llm: OpenAIServer) -> Iterator[tuple[ChatWorker, ChatWorker]]:
    """Two workers sharing the partitions; each accepts either token."""
    prices = topics.data_dir / "prices.json"
    prices.write_text(json.dumps({"date": "2026-11-24", "source": "test", "prices": PRICES}))
    env = llm_env(llm, GOAICORE_HTTP_TOKENS=",".join(TOKENS), GOAICORE_PRICES=str(prices))
    first = ChatWorker(topics, "first", **env).start()
    second = ChatWorker(topics, "second", **env).start()
    try:
        wait_ready(first.url)
        wait_ready(second.url)
        yield first, second
    finally:
        second.stop()
        first.stop()
