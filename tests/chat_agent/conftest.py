"""One scripted LLM and one chat worker per test module (a worker takes seconds to start)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from goaicore.config import Settings
from goaicore.kafka import ensure_topics
from goaicore.testing import OpenAIServer
from tests.brokers import SessionBroker
from tests.chat_agent.helpers import ChatWorker, Replies, ScriptedLLM, llm_env, wait_http


@pytest.fixture(scope="module")
def topics(kafka_broker: SessionBroker, tmp_path_factory: pytest.TempPathFactory) -> Settings:
    settings = kafka_broker.settings(tmp_path_factory.mktemp("chat"), "c")
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
