"""The conformance suite against the store over Kafka, with a store worker on the broker
of record (Apache Kafka where Java is here) running the offline model: a deployment in
the clear, and one whose workers seal (master keys set; publishers write to intake)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from goaicore.config import Settings
from goaicore.sealing.keys import MasterKeys
from goaicore.store.kafka import KafkaConversationStore
from goaicore.testing.conformance import CHECK_NAMES, check_named, run_check
from tests.brokers import SessionBroker
from tests.chat_agent.helpers import a_deployment

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module", params=["clear", "sealed"])
def deployment(
    request: pytest.FixtureRequest,
    kafka_broker: SessionBroker,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[Settings]:
    sealed = (
        {"master_keys": MasterKeys.generate("k1").to_text()} if request.param == "sealed" else {}
    )
    folder = tmp_path_factory.mktemp(f"conformance-{request.param}")
    settings = kafka_broker.settings(folder, f"conf{request.param}", **sealed)
    assert settings.intake == bool(sealed)
    with a_deployment(settings):
        yield settings


@pytest.mark.parametrize("name", CHECK_NAMES)
async def test_the_kafka_store_keeps_its_promises(deployment: Settings, name: str) -> None:
    await run_check(lambda: KafkaConversationStore(deployment), check_named(name))
