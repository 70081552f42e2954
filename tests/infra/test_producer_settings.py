"""The standard profile's producer settings reach every producer.

The reason for each setting is in goaicore.kafka.profile.
"""

from __future__ import annotations

from typing import Any

import pytest

from goaicore.clients import ChatClient, EventPublisher
from goaicore.config import Settings
from goaicore.kafka import ensure_topics
from goaicore.kafka.dead_letters import DeadLetterWriter

DURABLE = {"acks": -1, "enable_idempotence": True, "compression_type": "lz4", "linger_ms": 5}


@pytest.fixture
def topics(settings: Settings) -> Settings:
    ensure_topics(settings)
    return settings


def _config(producer: Any) -> dict[str, Any]:
    return {key: producer.config[key] for key in DURABLE}


def _aiokafka_config(producer: Any) -> dict[str, Any]:
    """What an AIOKafkaProducer was built with, from where it keeps each setting."""
    return {
        "acks": producer._sender._acks,
        "enable_idempotence": producer._txn_manager is not None,
        "compression_type": producer._compression_type,
        "linger_ms": round(producer._message_accumulator._linger_time * 1000),
    }


def test_event_publisher_chat_client_and_dead_letters_write_durably(topics: Settings) -> None:
    # The sync clients are facades over the asyncio ones: their producers are aiokafka's,
    # whose idempotent producer fails at start on the embedded broker (its profile).
    durable = {**DURABLE, "enable_idempotence": not topics.embedded_broker}
    with EventPublisher(topics) as publisher:
        assert _aiokafka_config(publisher._core._producer) == durable
    with ChatClient(topics) as client:  # a request is waited for alone: no linger
        assert _aiokafka_config(client._core._producer) == {**durable, "linger_ms": 0}
    writer = DeadLetterWriter(topics, "test")  # the projector's producer
    try:
        assert _config(writer._producer) == DURABLE
    finally:
        writer.close()


@pytest.mark.parametrize("profile", ["standard", "embedded"])
def test_the_store_workers_producer(settings: Settings, profile: str) -> None:
    from goaicore_store.app import create_app

    store = create_app(settings.with_overrides(broker_profile=profile))
    producer: Any = store.app.producer
    options = {
        **producer._settings_default(),
        **producer._settings_auth(),
        **producer._settings_extra(),
    }
    assert options["acks"] in (-1, "all")
    # zstd where the broker is Apache Kafka: aiokafka compresses lz4 at level 9 (LZ4 HC).
    assert options["compression_type"] == ("zstd" if profile == "standard" else "lz4")
    # aiokafka's idempotent producer fails at start on the embedded broker only.
    assert options.get("enable_idempotence", False) is (profile == "standard")
