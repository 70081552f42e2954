"""Fixtures for the Kafka client tests: the topics exist under the test's own prefix."""

from __future__ import annotations

import pytest

from goaicore.broker import ensure_topics
from goaicore.config import Settings


@pytest.fixture
def topics(settings: Settings) -> Settings:
    ensure_topics(settings)
    return settings
