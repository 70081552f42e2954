"""The README's Agents SDK quick start runs as written: an agent with a tool, two turns,
its session a conversation on Apache Kafka with a store worker folding, the model the
local Responses API server."""

from __future__ import annotations

import pytest

from goaicore.config import Settings
from goaicore.store.kafka import KafkaConversationStore
from goaicore.sync import run_sync
from goaicore.testing import ResponsesServer
from tests.readme import run_blocks
from tests.store.workers import worker_env

pytestmark = pytest.mark.integration


def test_the_agents_sdk_quick_start_runs_as_written(
    kafka_deployment: Settings, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    with ResponsesServer() as model:
        model.reply(tool_calls=[("call_1", "roll", {"sides": 20})])
        model.reply("You rolled a 17.")
        model.reply(tool_calls=[("call_2", "roll", {"sides": 20})])
        model.reply("This time, a 3.")
        env = {
            **worker_env(kafka_deployment),
            "OPENAI_BASE_URL": model.base_url,
            "OPENAI_API_KEY": "test-key",
            "OPENAI_AGENTS_DISABLE_TRACING": "1",
        }
        assert run_blocks("The OpenAI Agents SDK", env, monkeypatch) == 1
        assert model.pending == 0
        assert model.unexpected == 0
        second = model.bodies[-1]
    printed = capsys.readouterr().out
    assert "You rolled a 17.\nThis time, a 3.\n8 items in player-42's conversation\n" in printed
    assert isinstance(second, dict)
    kinds = [item.get("type", item.get("role")) for item in second["input"]]
    assert kinds[:5] == ["user", "function_call", "function_call_output", "message", "user"]

    store = KafkaConversationStore(kafka_deployment)
    try:
        logged = run_sync(store.read("player-42", snapshot=False))
    finally:
        run_sync(store.close())
    assert [type(e.event.body).__name__ for e in logged.events] == [
        "UserMessage",
        "AssistantTurn",
        "ToolResult",
        "AssistantTurn",
    ] * 2
