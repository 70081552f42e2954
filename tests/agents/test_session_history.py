"""An Agents SDK conversation is a goaicore conversation like any other: on Apache Kafka
with workers that seal content, its snapshot replays and verifies from the log, it forks
at an earlier point, undo and a chat turn of another provider work on it (its reasoning
items kept verbatim), and erasure makes its content unreadable."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest

from goaicore.config import Settings
from goaicore.integrations.openai_agents import GoaicoreSession
from goaicore.records import ReplyStatus
from goaicore.replay.reader import HistoryReader
from goaicore.replay.verify import verify_snapshot
from goaicore.sealing.keys import MasterKeys
from goaicore.store.kafka import KafkaConversationStore
from goaicore.sync import on_private_loop
from tests.brokers import SessionBroker
from tests.chat_agent.helpers import a_deployment

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def sealed_deployment(
    kafka_broker: SessionBroker, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Settings]:
    keys = MasterKeys.generate("k1").to_text()
    settings = kafka_broker.settings(
        tmp_path_factory.mktemp("agents-sealed"), "agentsealed", master_keys=keys
    )
    assert settings.intake
    with a_deployment(settings):
        yield settings


@pytest.fixture
async def store(sealed_deployment: Settings) -> AsyncIterator[KafkaConversationStore]:
    opened = KafkaConversationStore(sealed_deployment, source="openai-agents")
    yield opened
    await on_private_loop(opened.close())


def session_on(
    store: KafkaConversationStore, conversation_id: str | None = None
) -> GoaicoreSession:
    return GoaicoreSession(conversation_id or f"agents-{uuid.uuid4().hex[:10]}", store)


QUESTION: Any = {"content": "Roll a d20 for me", "role": "user"}
STEP: Any = [
    {
        "id": "rs_1",
        "summary": [{"text": "A d20.", "type": "summary_text"}],
        "type": "reasoning",
        "encrypted_content": "gAAAAB-opaque",
    },
    {
        "arguments": '{"sides":20}',
        "call_id": "call_1",
        "name": "roll",
        "type": "function_call",
        "id": "fc_1",
        "status": "completed",
    },
    {"call_id": "call_1", "output": "17", "type": "function_call_output"},
    {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "status": "completed",
        "content": [{"type": "output_text", "text": "You rolled 17.", "annotations": []}],
    },
]
FOLLOW_UP: Any = {"content": "And again?", "role": "user"}


async def a_conversation(session: GoaicoreSession) -> list[Any]:
    await session.add_items([QUESTION])
    await session.add_items(STEP)
    await session.add_items([FOLLOW_UP])
    return [QUESTION, *STEP, FOLLOW_UP]


async def test_its_snapshot_replays_from_the_log_byte_for_byte(
    store: KafkaConversationStore, sealed_deployment: Settings
) -> None:
    session = session_on(store)
    await a_conversation(session)
    assert await session.pop_item() == FOLLOW_UP
    read = await on_private_loop(store.read(session.session_id))
    assert read.snapshot is not None
    with HistoryReader(sealed_deployment) as history:
        assert verify_snapshot(history, read.snapshot) == []
    kinds = [type(e.event.body).__name__ for e in read.events]
    assert kinds == [
        "UserMessage",
        "AssistantTurn",
        "ToolResult",
        "AssistantTurn",
        "UserMessage",
        "ConversationRewound",
    ]
    assert await session.get_items() == [QUESTION, *STEP]


async def test_it_forks_at_an_earlier_point(store: KafkaConversationStore) -> None:
    session = session_on(store)
    await a_conversation(session)
    read = await on_private_loop(store.read(session.session_id))
    before_follow_up = read.events[-1].offset
    branch = f"{session.session_id}-branch"
    await on_private_loop(store.fork(session.session_id, branch, before_offset=before_follow_up))
    forked = session_on(store, branch)
    assert await forked.get_items() == [QUESTION, *STEP]
    other: Any = {"content": "Roll a d6 instead", "role": "user"}
    await forked.add_items([other])
    assert await forked.get_items() == [QUESTION, *STEP, other]
    assert await session.get_items() == [QUESTION, *STEP, FOLLOW_UP]  # the source unchanged


async def test_undo_and_a_turn_of_another_provider_keep_its_items(
    store: KafkaConversationStore,
) -> None:
    session = session_on(store)
    await a_conversation(session)
    undone = await on_private_loop(store.undo(session.session_id))
    assert undone.text == "And again?"
    assert await session.get_items() == [QUESTION, *STEP]
    reply = await on_private_loop(store.ask(session.session_id, "And again?", timeout=60))
    assert reply.status == ReplyStatus.OK, reply.error
    items: list[Any] = await session.get_items()
    assert items[: 1 + len(STEP)] == [QUESTION, *STEP]  # reasoning and call kept verbatim
    assert items[1 + len(STEP)] == {"role": "user", "content": "And again?"}
    assert items[-1]["role"] == "assistant"
    assert items[-1]["content"] == reply.text


async def test_erasure_makes_its_content_unreadable(store: KafkaConversationStore) -> None:
    session = session_on(store)
    await a_conversation(session)
    erased = await on_private_loop(store.erase(session.session_id, reason="player asked"))
    assert erased.key_destroyed
    assert await session.get_items() == []
    logged = await on_private_loop(store.read(session.session_id, snapshot=False))
    assert logged.skipped == 0
    texts = [getattr(e.event.body, "raw_json", None) for e in logged.events]
    assert not any(t and "d20" in t for t in texts)  # the raw items went with the key
