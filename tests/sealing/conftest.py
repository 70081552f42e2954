"""A sealing deployment on Apache Kafka: settings with a master key, and the scripted LLM."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from goaicore.config import Settings
from goaicore.kafka import ensure_topics
from goaicore.sealing.keys import MasterKeys
from goaicore.testing import OpenAIServer
from tests.brokers import SessionBroker
from tests.chat_agent.helpers import ScriptedLLM


@pytest.fixture(scope="module")
def sealed(kafka_broker: SessionBroker, tmp_path_factory: pytest.TempPathFactory) -> Settings:
    """Master keys set, so publishers write to intake (GOAICORE_INTAKE's default)."""
    masters = MasterKeys.generate("k1").to_text()
    settings = kafka_broker.settings(tmp_path_factory.mktemp("sealed"), "s", master_keys=masters)
    assert settings.intake
    ensure_topics(settings)
    return settings


@pytest.fixture(scope="module")
def llm() -> Iterator[OpenAIServer]:
    with OpenAIServer(responder=ScriptedLLM()) as server:
        yield server
