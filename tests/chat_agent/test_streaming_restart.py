"""A worker killed in the middle of a streamed turn: the next owner of the conversation
runs the request again, the stream says so, and the log holds the turn once."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest

from goaicore.clients import AsyncChatClient, HistoryReader
from goaicore.config import Settings
from goaicore.conversation.progress import TextDelta
from goaicore.kafka import ensure_topics
from goaicore.records import AssistantTurn, ChatReply, ReplyStatus, UserMessage
from goaicore.store.reply_streams import Restarted
from goaicore.testing import OpenAIServer
from goaicore.testing.streams import token_text
from tests.brokers import SessionBroker
from tests.chat_agent.helpers import ChatWorker, llm_env, wait_http

pytestmark = pytest.mark.integration


@pytest.fixture
def fresh_topics(kafka_broker: SessionBroker, tmp_path_factory: pytest.TempPathFactory) -> Settings:
    settings = kafka_broker.settings(tmp_path_factory.mktemp("restart"), "r")
    ensure_topics(settings)
    return settings


@pytest.fixture
def workers(fresh_topics: Settings, llm: OpenAIServer) -> Iterator[list[ChatWorker]]:
    started: list[ChatWorker] = []
    yield started
    for worker in started:
        worker.stop()


async def test_a_worker_killed_mid_stream_restarts_the_turn_on_the_next_owner(
    fresh_topics: Settings, workers: list[ChatWorker], llm: OpenAIServer
) -> None:
    first = ChatWorker(fresh_topics, "first", **llm_env(llm)).start()
    workers.append(first)
    wait_http(first.url)
    conversation = f"restart-{uuid.uuid4().hex[:8]}"
    question = f"drip 60 20 {conversation}"
    items: list[object] = []
    async with AsyncChatClient(fresh_topics) as client:
        stream = client.ask_stream(conversation, question, timeout=180)
        while len([i for i in items if isinstance(i, TextDelta)]) < 3:
            items.append(await anext(stream))
        first.kill9()  # mid-turn: nothing of it is in the log yet
        second = ChatWorker(fresh_topics, "second", **llm_env(llm)).start()
        workers.append(second)
        items += [i async for i in stream]
    restarts = [i for i in items if isinstance(i, Restarted)]
    assert len(restarts) == 1
    after = items[items.index(restarts[0]) + 1 :]
    reply = after[-1]
    assert isinstance(reply, ChatReply)
    assert reply.status is ReplyStatus.OK
    assert "".join(i.text for i in after if isinstance(i, TextDelta)) == token_text(60)
    asked = [b["messages"][-1].get("content") for b in llm.bodies].count(question)
    assert asked == 2  # once by each owner
    with HistoryReader(fresh_topics) as history:
        bodies = [e.body for e in history.events(conversation)]
    assert [type(b) for b in bodies] == [UserMessage, AssistantTurn]
    turn = bodies[1]
    assert isinstance(turn, AssistantTurn)
    assert turn.text == token_text(60)
