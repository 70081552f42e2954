"""Two workers with bearer tokens on one broker, a scripted LLM, for the HTTP API's tests."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest

from goaicore.config import Settings
from goaicore.devstack.demo import wait_ready
from goaicore.kafka import ensure_topics
from goaicore.testing import OpenAIServer
from tests.brokers import SessionBroker
from tests.chat_agent.helpers import ChatWorker, ScriptedLLM, llm_env

TOKENS = ("first-token-0123456789abcdef", "second-token-0123456789abcdef")


@pytest.fixture(scope="module")
def topics(kafka_broker: SessionBroker, tmp_path_factory: pytest.TempPathFactory) -> Settings:
    settings = Settings(
        env={},
        bootstrap_servers=kafka_broker.bootstrap_servers,
        broker_profile=kafka_broker.profile,
        topic_prefix=f"h{uuid.uuid4().hex[:12]}",
        partitions=3,
        data_dir=tmp_path_factory.mktemp("http"),
    )
    ensure_topics(settings)
    return settings


@pytest.fixture(scope="module")
def llm() -> Iterator[OpenAIServer]:
    with OpenAIServer(responder=ScriptedLLM()) as server:
        yield server


@pytest.fixture(scope="module")
def pair(topics: Settings, llm: OpenAIServer) -> Iterator[tuple[ChatWorker, ChatWorker]]:
    """Two workers sharing the partitions; each accepts either token."""
    env = llm_env(llm, GOAICORE_HTTP_TOKENS=",".join(TOKENS))
    first = ChatWorker(topics, "first", **env).start()
    second = ChatWorker(topics, "second", **env).start()
    try:
        wait_ready(first.url)
        wait_ready(second.url)
        yield first, second
    finally:
        second.stop()
        first.stop()
