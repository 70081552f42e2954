"""A Kafka deployment for the Agents SDK tests: topics of their own on the session's
broker and a store worker folding them, shared by this folder's tests (each names its
conversations apart)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from goaicore.config import Settings
from tests.brokers import SessionBroker
from tests.chat_agent.helpers import a_deployment


@pytest.fixture(scope="package")
def kafka_deployment(
    kafka_broker: SessionBroker, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Settings]:
    settings = kafka_broker.settings(tmp_path_factory.mktemp("agents"), "agents")
    with a_deployment(settings):
        yield settings
