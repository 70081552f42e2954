"""Streamed replies end to end: a worker process on the broker of record, the OpenAI SDK
streaming from a scripted server, clients over Kafka and over HTTP (Server-Sent Events).

The scripted model streams ``drip <n> <rate>`` as n tokens at that rate, so a turn is
still running while a test retries, disconnects or cancels it.
"""

from __future__ import annotations

import json
import threading
import time
import uuid
from collections.abc import Iterator
from http.client import HTTPConnection
from typing import Any
from urllib.parse import urlsplit

import pytest
from kafka import KafkaProducer

from goaicore.clients import AsyncChatClient, EventPublisher, HistoryReader
from goaicore.config import Settings
from goaicore.conversation.progress import TextDelta, ToolCallFinished, ToolCallStarted
from goaicore.records import AssistantTurn, ChatReply, ReplyStatus, UserMessage, new_chat_request
from goaicore.records.avro.api import encode_chat_request
from goaicore.testing import OpenAIServer
from goaicore.testing.streams import token_text
from tests.chat_agent.helpers import ChatWorker, http
from tests.store.workers import dead_letters

pytestmark = pytest.mark.integration


def new_conversation(label: str) -> str:
    return f"stream-{label}-{uuid.uuid4().hex[:8]}"


def events_of(settings: Settings, conversation: str) -> list[Any]:
    with HistoryReader(settings) as history:
        return [e.body for e in history.events(conversation)]


class SseAsk:
    """One ``POST .../messages`` with ``Accept: text/event-stream``, read event by event."""

    def __init__(self, url: str, conversation: str, body: dict[str, Any]) -> None:
        parts = urlsplit(url)
        self.connection = HTTPConnection(parts.hostname or "", parts.port, timeout=60)
        self.connection.request(
            "POST",
            f"/v1/conversations/{conversation}/messages",
            body=json.dumps(body),
            headers={"Content-Type": "application/json", "Accept": "text/event-stream"},
        )
        self.response = self.connection.getresponse()

    def __iter__(self) -> Iterator[tuple[str, Any]]:
        event, data = "message", ""
        while True:
            line = self.response.readline().decode()
            if not line:
                return
            line = line.rstrip("\n")
            if line.startswith(":"):
                continue
            if line.startswith("event: "):
                event = line[len("event: ") :]
            elif line.startswith("data: "):
                data += line[len("data: ") :]
            elif not line:
                if data:
                    yield event, json.loads(data)
                event, data = "message", ""

    def close(self) -> None:
        self.connection.close()


def text_of(events: list[tuple[str, Any]]) -> str:
    return "".join(data["text"] for event, data in events if event == "delta")


async def streamed(settings: Settings, conversation: str, text: str, **kw: Any) -> list[Any]:
    async with AsyncChatClient(settings) as client:
        return [item async for item in client.ask_stream(conversation, text, timeout=60, **kw)]


async def test_a_streamed_ask_with_a_tool_gives_its_progress_then_stores_what_an_ask_stores(
    topics: Settings, worker: ChatWorker
) -> None:
    question = 'call score_lookup {"team": "Leeds"}'
    streamed_in, asked_in = new_conversation("tools"), new_conversation("tools-asked")
    items = await streamed(topics, streamed_in, question)
    async with AsyncChatClient(topics) as client:
        asked = await client.ask(asked_in, question, timeout=60)
    reply = items[-1]
    assert isinstance(reply, ChatReply)
    assert reply.status is ReplyStatus.OK
    assert reply.text == asked.text
    kinds = [type(i).__name__ for i in items]
    assert (
        kinds.index("ToolCallStarted") < kinds.index("ToolCallFinished") < kinds.index("TextDelta")
    )
    started = next(i for i in items if isinstance(i, ToolCallStarted))
    assert (started.name, json.loads(started.arguments)) == ("score_lookup", {"team": "Leeds"})
    finished = next(i for i in items if isinstance(i, ToolCallFinished))
    assert finished.call_id == started.call_id
    assert "".join(i.text for i in items if isinstance(i, TextDelta)) == reply.text
    mine, theirs = events_of(topics, streamed_in), events_of(topics, asked_in)
    assert [type(b).__name__ for b in mine] == [type(b).__name__ for b in theirs]
    assert [type(b).__name__ for b in mine] == [
        "UserMessage",
        "AssistantTurn",
        "ToolResult",
        "AssistantTurn",
    ]
    assert mine[-1].raw_json == theirs[-1].raw_json  # the streamed reply, as stored whole


async def test_an_event_published_just_before_a_streamed_question_is_in_its_prompt(
    topics: Settings, worker: ChatWorker, llm: OpenAIServer
) -> None:
    conversation = new_conversation("ryw")
    with EventPublisher(topics) as publisher:
        publisher.game_event(conversation, "The player opened the vault", kind="move")
    items = await streamed(topics, conversation, "what did I open?")
    assert items[-1].status is ReplyStatus.OK
    [body] = [b for b in llm.bodies if b["messages"][-1].get("content") == "what did I open?"]
    assert body["stream"] is True
    assert "The player opened the vault" in [m.get("content") for m in body["messages"]]


def test_an_ask_over_http_streams_server_sent_events_then_done(
    topics: Settings, worker: ChatWorker
) -> None:
    conversation = new_conversation("sse")
    ask = SseAsk(worker.url, conversation, {"text": "drip 12 100"})
    assert ask.response.status == 200
    assert ask.response.getheader("Content-Type", "").startswith("text/event-stream")
    assert ask.response.getheader("X-Request-Id")  # named, to cancel or rejoin it
    events = list(ask)
    ask.close()
    kinds = [event for event, _ in events]
    assert kinds[-1] == "done"
    assert set(kinds[:-1]) == {"delta"}
    assert len(kinds) > 2  # the text came in pieces
    done = events[-1][1]
    assert done["status"] == "ok"
    assert text_of(events) == done["text"] == token_text(12)
    assert [type(b) for b in events_of(topics, conversation)] == [UserMessage, AssistantTurn]


def test_bad_input_to_a_streamed_ask_is_a_json_error(topics: Settings, worker: ChatWorker) -> None:
    ask = SseAsk(worker.url, new_conversation("bad"), {"text": "   "})
    assert ask.response.status == 400
    assert "text" in json.loads(ask.response.read())["error"]["message"]
    ask.close()


def test_a_retry_while_the_turn_runs_joins_its_stream_and_one_after_gets_its_reply(
    topics: Settings, worker: ChatWorker, llm: OpenAIServer
) -> None:
    conversation, request_id = new_conversation("join"), uuid.uuid4().hex
    question = f"drip 30 20 {request_id}"
    body = {"text": question, "request_id": request_id}
    first = SseAsk(worker.url, conversation, body)
    first_events = iter(first)
    assert next(first_events)[0] == "delta"  # the turn runs
    joined = SseAsk(worker.url, conversation, body)
    joined_events = list(joined)
    rest = list(first_events)
    first.close()
    joined.close()
    assert joined_events[-1][0] == rest[-1][0] == "done"
    assert text_of(joined_events) == token_text(30)  # from the start, not from where it joined
    assert joined_events[-1][1] == rest[-1][1]
    status, again = http("POST", f"{worker.url}/v1/conversations/{conversation}/messages", body)
    assert (status, again["text"]) == (200, token_text(30))
    assert [b["messages"][-1].get("content") for b in llm.bodies].count(question) == 1
    turns = [b for b in events_of(topics, conversation) if isinstance(b, AssistantTurn)]
    assert len(turns) == 1


async def test_a_kafka_client_retrying_a_running_turn_joins_its_stream(
    topics: Settings, worker: ChatWorker, llm: OpenAIServer
) -> None:
    conversation, request_id = new_conversation("join-kafka"), uuid.uuid4().hex
    question = f"drip 30 20 {request_id}"
    async with AsyncChatClient(topics) as first, AsyncChatClient(topics) as second:
        stream = first.ask_stream(conversation, question, timeout=60, request_id=request_id)
        assert isinstance(await anext(stream), TextDelta)
        joined = [
            i
            async for i in second.ask_stream(
                conversation, question, timeout=60, request_id=request_id
            )
        ]
        await stream.aclose()  # type: ignore[attr-defined]
    assert "".join(i.text for i in joined if isinstance(i, TextDelta)) == token_text(30)
    assert isinstance(joined[-1], ChatReply)
    assert joined[-1].text == token_text(30)
    assert [b["messages"][-1].get("content") for b in llm.bodies].count(question) == 1


def test_a_client_that_disconnects_leaves_the_turn_to_finish_and_be_recorded(
    topics: Settings, worker: ChatWorker, llm: OpenAIServer
) -> None:
    conversation, request_id = new_conversation("gone"), uuid.uuid4().hex
    body = {"text": f"drip 20 20 {request_id}", "request_id": request_id}
    ask = SseAsk(worker.url, conversation, body)
    assert next(iter(ask))[0] == "delta"
    ask.close()  # the player closed the app
    status, reply = http("POST", f"{worker.url}/v1/conversations/{conversation}/messages", body)
    assert (status, reply["text"]) == (200, token_text(20))
    turns = [b for b in events_of(topics, conversation) if isinstance(b, AssistantTurn)]
    assert [t.text for t in turns] == [token_text(20)]
    assert [b["messages"][-1].get("content") for b in llm.bodies].count(body["text"]) == 1


def test_a_cancel_over_http_stops_the_turn_and_records_what_it_said(
    topics: Settings, worker: ChatWorker
) -> None:
    conversation, request_id = new_conversation("cancel"), uuid.uuid4().hex
    ask = SseAsk(worker.url, conversation, {"text": "drip 400 20", "request_id": request_id})
    events = iter(ask)
    seen = [next(events), next(events), next(events)]
    status, answer = http("DELETE", f"{worker.url}/v1/requests/{request_id}")
    assert (status, answer["conversation_id"]) == (202, conversation)
    seen += list(events)
    ask.close()
    event, done = seen[-1]
    assert (event, done["status"]) == ("done", "cancelled")
    said = text_of(seen)
    assert said == done["text"]
    assert said
    assert token_text(400).startswith(said)
    assert len(said) < len(token_text(400))
    bodies = events_of(topics, conversation)
    assert [type(b) for b in bodies] == [UserMessage, AssistantTurn]
    turn = bodies[1]
    assert (turn.text, turn.finish_reason) == (said, "cancelled")
    assert turn.usage is not None
    assert turn.usage.prompt_tokens > 0
    assert turn.usage.completion_tokens > 0
    url = f"{worker.url}/v1/conversations/{conversation}/messages"
    status, after = http("POST", url, {"text": "still there?"})
    assert (status, after["status"]) == (200, "ok")


async def test_a_cancel_from_a_kafka_client_stops_its_running_turn(
    topics: Settings, worker: ChatWorker
) -> None:
    conversation, request_id = new_conversation("cancel-kafka"), uuid.uuid4().hex
    async with AsyncChatClient(topics) as client:
        stream = client.ask_stream(
            conversation, "drip 400 20", timeout=60, request_id=request_id, join=False
        )
        items = [await anext(stream)]
        await client.cancel(request_id)
        items += [i async for i in stream]
    reply = items[-1]
    assert isinstance(reply, ChatReply)
    assert reply.status is ReplyStatus.CANCELLED
    assert reply.text == "".join(i.text for i in items if isinstance(i, TextDelta))
    assert len(reply.text or "") < len(token_text(400))


def test_a_cancel_of_an_unknown_request_is_a_404_and_a_bad_id_a_400(
    worker: ChatWorker,
) -> None:
    status, answer = http("DELETE", f"{worker.url}/v1/requests/{uuid.uuid4().hex}")
    assert status == 404
    assert "conversation_id" in answer["error"]["message"]
    status, _ = http("DELETE", f"{worker.url}/v1/requests/%20%20")
    assert status == 400


def test_many_streams_at_once_each_get_their_own_text(topics: Settings, worker: ChatWorker) -> None:
    results: dict[int, list[tuple[str, Any]]] = {}

    def ask(n: int) -> None:
        streaming = SseAsk(worker.url, new_conversation(f"many{n}"), {"text": f"drip {n + 5} 200"})
        results[n] = list(streaming)
        streaming.close()

    threads = [threading.Thread(target=ask, args=(n,)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(90)
    for n, events in results.items():
        assert events[-1][0] == "done"
        assert text_of(events) == token_text(n + 5)
    assert sorted(results) == list(range(8))


def test_a_cancel_under_another_conversations_key_is_a_dead_letter_and_stops_nothing(
    topics: Settings, worker: ChatWorker
) -> None:
    conversation, request_id = new_conversation("stray-cancel"), uuid.uuid4().hex
    ask = SseAsk(worker.url, conversation, {"text": "drip 40 40", "request_id": request_id})
    events = iter(ask)
    assert next(events)[0] == "delta"
    stray = new_chat_request(conversation, "", request_id=request_id, cancel=True)
    with KafkaProducer(bootstrap_servers=topics.require_bootstrap()) as producer:
        producer.send(
            topics.topic("requests"), key=b"elsewhere", value=encode_chat_request(stray)
        ).get(10)
    rest = list(events)
    ask.close()
    assert rest[-1][1]["status"] == "ok"  # not cancelled: the record was not its key's
    deadline = time.monotonic() + 30
    while not any(
        letter.reason == "key-mismatch" and "cancel" in letter.message
        for letter in dead_letters(topics, "requests").values()
    ):
        assert time.monotonic() < deadline, "the stray cancel was not set aside"
        time.sleep(0.2)
