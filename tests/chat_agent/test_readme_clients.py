"""The README's Kafka client examples run as written against a worker on a real broker."""

from __future__ import annotations

import pytest

from goaicore.config import Settings
from tests.chat_agent.helpers import ChatWorker
from tests.readme import run_blocks
from tests.store.workers import worker_env


def test_the_kafka_client_examples_run_as_written(
    topics: Settings,
    worker: ChatWorker,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert run_blocks("Kafka clients", worker_env(topics), monkeypatch) >= 4
    printed = capsys.readouterr().out
    assert "ok echo: What's my score?" in printed
    assert "ok echo: Plan my route" in printed
    assert "ok echo: What did I just find?" in printed
    assert "GameEvent" in printed
    assert "reply to " in printed  # a new group from the beginning sees earlier replies
    assert "ok echo: What is my quest?" in printed  # the store over Kafka
    assert "['GameEvent', 'UserMessage', 'AssistantTurn']" in printed


def test_the_streaming_examples_run_as_written(
    topics: Settings,
    worker: ChatWorker,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert run_blocks("Streaming a reply", worker_env(topics), monkeypatch) == 1
    printed = capsys.readouterr().out
    assert "echo: Tell me about the theatre\nok\n" in printed  # the client, through a worker
    assert "[offline] You said: Where is the stage door?\nstop\n" in printed  # the library
