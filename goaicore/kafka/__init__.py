"""Kafka plumbing: the embedded broker, its client profile, topic admin."""

from goaicore.kafka.embedded import BrokerStartError, EmbeddedBroker
from goaicore.kafka.profile import ClientProfile, client_profile
from goaicore.kafka.security import KafkaSecurityError
from goaicore.kafka.topics import TOPICS, TopicMismatchError, TopicSpec, ensure_topics

__all__ = [
    "TOPICS",
    "BrokerStartError",
    "ClientProfile",
    "EmbeddedBroker",
    "KafkaSecurityError",
    "TopicMismatchError",
    "TopicSpec",
    "client_profile",
    "ensure_topics",
]
