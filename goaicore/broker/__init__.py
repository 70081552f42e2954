"""Kafka plumbing: the embedded broker, its client profile, topic admin."""

from goaicore.broker.embedded import BrokerStartError, EmbeddedBroker
from goaicore.broker.profile import ClientProfile, client_profile
from goaicore.broker.security import KafkaSecurityError
from goaicore.broker.topics import TOPICS, TopicMismatchError, TopicSpec, ensure_topics

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
