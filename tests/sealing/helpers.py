"""Helpers of the sealing tests: a worker started and ready, a topic's records read back."""

from __future__ import annotations

from kafka import KafkaConsumer, TopicPartition

from goaicore.config import Settings
from goaicore.devstack.demo import wait_ready
from goaicore.kafka.partitioner import partition_for
from goaicore.testing import OpenAIServer
from tests.chat_agent.helpers import ChatWorker, llm_env


def start_worker(settings: Settings, llm: OpenAIServer, name: str) -> ChatWorker:
    worker = ChatWorker(settings, name, **llm_env(llm)).start()
    wait_ready(worker.url)  # owns its partitions: POST /events is served here
    return worker


def topic_records(settings: Settings, topic: str, conversation: str) -> list[object]:
    """Every record of ``topic`` under the conversation's key, as stored."""
    consumer = KafkaConsumer(bootstrap_servers=settings.require_bootstrap())
    try:
        partition = TopicPartition(
            settings.topic(topic), partition_for(conversation, settings.partitions)
        )
        consumer.assign([partition])
        consumer.seek_to_beginning(partition)
        end = consumer.end_offsets([partition])[partition]
        out: list[object] = []
        while consumer.position(partition) < end:
            for batch in consumer.poll(timeout_ms=1000).values():
                out.extend(batch)
        return [r for r in out if r.key == conversation.encode()]  # type: ignore[attr-defined]
    finally:
        consumer.close()
