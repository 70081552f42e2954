"""Fixtures for the Kafka client tests: the topics exist under the test's own prefix."""

from __future__ import annotations

import pytest

from goaicore.config import Settings
from goaicore.kafka import ensure_topics


@pytest.fixture
def topics(settings: Settings) -> Settings:
    ensure_topics(settings)
    return settings
