"""One scripted LLM and one chat worker per test module (a worker takes seconds to start)."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest

from goaicore.config import Settings
from goaicore.kafka import ensure_topics
from goaicore.testing import OpenAIServer
from tests.brokers import SessionBroker
from tests.chat_agent.helpers import ChatWorker, Replies, ScriptedLLM, llm_env, wait_http


@pytest.fixture(scope="module")
def topics(kafka_broker: SessionBroker, tmp_path_factory: pytest.TempPathFactory) -> Settings:
    settings = Settings(
        env={},
        bootstrap_servers=kafka_broker.bootstrap_servers,
        broker_profile=kafka_broker.profile,
        topic_prefix=f"c{uuid.uuid4().hex[:12]}",
        partitions=3,
        data_dir=tmp_path_factory.mktemp("chat"),
    )
    ensure_topics(settings)
    return settings


@pytest.fixture(scope="module")
def model() -> ScriptedLLM:
    return ScriptedLLM()


@pytest.fixture(scope="module")
def llm(model: ScriptedLLM) -> Iterator[OpenAIServer]:
    with OpenAIServer(responder=model) as server:
        yield server


@pytest.fixture(scope="module")
def worker(topics: Settings, llm: OpenAIServer) -> Iterator[ChatWorker]:
    process = ChatWorker(topics, **llm_env(llm)).start()
    try:
        wait_http(process.url)
        yield process
    finally:
        process.stop()


@pytest.fixture(scope="module")
def replies(topics: Settings) -> Iterator[Replies]:
    with Replies(topics) as collector:
        yield collector
