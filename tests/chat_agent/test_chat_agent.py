"""End to end: a real worker process, the embedded broker, the OpenAI SDK on a scripted server."""

from __future__ import annotations

import asyncio
import json
from datetime import timedelta
from typing import Any

import pytest

from goaicore.clients import (
    AsyncChatClient,
    AsyncEventPublisher,
    AsyncHistoryReader,
    EventPublisher,
    HistoryReader,
    ReplyTimeout,
)
from goaicore.config import Settings
from goaicore.records import (
    AssistantTurn,
    ChatReply,
    GameEvent,
    ReplyStatus,
    ToolResult,
    TurnFailed,
    UserMessage,
    new_chat_request,
    utc_now,
)
from goaicore.records.avro.api import encode_chat_request
from goaicore.store.kafka import KafkaConversationStore
from goaicore.store.turn_ends import turn_end_of
from goaicore.testing import OpenAIServer
from tests.brokers import SessionBroker
from tests.chat_agent.helpers import ChatWorker, Replies, ScriptedLLM, snapshot_when
from tests.kafka_segments import stored_batches
from tests.projector.helpers import all_dead_letters


def _bodies_with(llm: OpenAIServer, text: str) -> list[dict[str, Any]]:
    """LLM request bodies whose last message is ``text``."""
    return [b for b in llm.bodies if b["messages"][-1].get("content") == text]


def test_a_question_gets_a_reply_and_its_turn_is_in_the_log(
    topics: Settings, worker: ChatWorker, replies: Replies, llm: OpenAIServer
) -> None:
    request = new_chat_request("first", "hello there", system="Speak like a pirate")
    replies.send(request)
    reply = replies.wait(request.request_id)
    assert (reply.status, reply.text) == (ReplyStatus.OK, "echo: hello there")
    assert reply.usage is not None
    assert reply.usage.llm_calls == 1
    [body] = _bodies_with(llm, "hello there")
    assert body["messages"][0] == {"role": "system", "content": "Speak like a pirate"}
    with HistoryReader(topics) as history:
        events = list(history.events("first"))
    assert [type(e.body) for e in events] == [UserMessage, AssistantTurn]
    assert {e.causation_id for e in events} == {request.request_id}
    assistant = events[1].body
    assert isinstance(assistant, AssistantTurn)
    assert (assistant.model, assistant.finish_reason) == ("gpt-test", "stop")
    # The system prompt is sent, never stored.
    assert "pirate" not in json.dumps([str(e.body) for e in events])


def test_an_event_published_just_before_a_question_is_in_its_prompt(
    topics: Settings, worker: ChatWorker, replies: Replies, llm: OpenAIServer
) -> None:
    sent = []
    with EventPublisher(topics) as publisher:
        for n in range(10):
            conversation = f"ryw-{n}"
            publisher.game_event(conversation, f"Player {n} reached the stage door", kind="move")
            request = new_chat_request(conversation, f"where am I, {n}?")
            replies.send(request)  # straight after the event: no wait for the fold
            sent.append((n, request))
    for n, request in sent:
        assert replies.wait(request.request_id).status == ReplyStatus.OK
        [body] = _bodies_with(llm, f"where am I, {n}?")
        contents = [m.get("content") for m in body["messages"]]
        assert f"Player {n} reached the stage door" in contents


def test_interleaved_requests_of_20_conversations_keep_order_and_run_concurrently(
    topics: Settings, worker: ChatWorker, replies: Replies, llm: OpenAIServer, model: ScriptedLLM
) -> None:
    model.delay = 0.05
    model.max_in_flight = 0
    try:
        requests = [
            new_chat_request(f"order-{c}", f"order-{c} question {q}")
            for q in range(5)
            for c in range(20)
        ]
        for request in requests:
            replies.send(request)
        for request in requests:
            reply = replies.wait(request.request_id, timeout=120)
            assert reply.text == f"echo: {request.text}"
    finally:
        model.delay = 0.0
    assert model.max_in_flight > 1, "conversations did not run concurrently"
    for c in range(20):
        # Question q saw every earlier question of its conversation and its answer, in order.
        for q in range(5):
            [body] = _bodies_with(llm, f"order-{c} question {q}")
            users = [m["content"] for m in body["messages"] if m["role"] == "user"]
            assert users == [f"order-{c} question {k}" for k in range(q + 1)]
    expected = [
        text for q in range(5) for text in (f"order-7 question {q}", f"echo: order-7 question {q}")
    ]
    snapshot_when(topics, "order-7", lambda s: [m.text for m in s.messages] == expected)


def test_a_tool_call_runs_the_registry_tool_and_the_chain_is_logged(
    topics: Settings, worker: ChatWorker, replies: Replies, llm: OpenAIServer
) -> None:
    request = new_chat_request(
        "tools", 'call score_lookup {"team": "Leeds"}', tools=["score_lookup"]
    )
    replies.send(request)
    reply = replies.wait(request.request_id)
    assert reply.status == ReplyStatus.OK
    assert reply.text == 'tool said: {"team": "Leeds", "points": 42}'
    [first, second] = [
        b
        for b in llm.bodies
        if b["messages"][-1].get("role") in ("user", "tool")
        and any(m.get("content") == request.text for m in b["messages"])
    ]
    assert [t["function"]["name"] for t in first["tools"]] == ["score_lookup"]
    assert second["messages"][-1]["role"] == "tool"
    with HistoryReader(topics) as history:
        bodies = [e.body for e in history.events("tools")]
    assert [type(b) for b in bodies] == [UserMessage, AssistantTurn, ToolResult, AssistantTurn]
    assert bodies[1].tool_calls[0].name == "score_lookup"  # type: ignore[union-attr]
    assert bodies[2].content == '{"team": "Leeds", "points": 42}'  # type: ignore[union-attr]


def _turn_failed(topics: Settings, conversation: str, request_id: str) -> TurnFailed:
    with HistoryReader(topics) as history:
        events = [e for e in history.events(conversation) if e.causation_id == request_id]
    assert [type(e.body) for e in events] == [TurnFailed], "a failed turn appends only TurnFailed"
    body = events[0].body
    assert isinstance(body, TurnFailed)
    assert body.request_id == request_id
    return body


def test_an_llm_error_is_an_error_reply_and_leaves_no_half_turn(
    topics: Settings, worker: ChatWorker, replies: Replies
) -> None:
    request = new_chat_request("fails", "fail")
    replies.send(request)
    reply = replies.wait(request.request_id)
    assert reply.status == ReplyStatus.ERROR
    assert reply.error is not None
    assert "the test model refuses" in reply.error
    assert _turn_failed(topics, "fails", request.request_id).kind == "provider"
    # The conversation goes on, and the failed question is not in its history.
    after = new_chat_request("fails", "still there?")
    replies.send(after)
    assert replies.wait(after.request_id).text == "echo: still there?"
    snapshot = snapshot_when(topics, "fails", lambda s: len(s.messages) >= 2)
    assert [m.text for m in snapshot.messages] == ["still there?", "echo: still there?"]
    assert snapshot.events_by_type["TurnFailed"] == 1


def test_a_passed_deadline_and_a_slow_llm_are_timeouts(
    topics: Settings, worker: ChatWorker, replies: Replies
) -> None:
    late = new_chat_request("late", "hello", deadline=utc_now() - timedelta(seconds=1))
    slow = new_chat_request("slow", "slow 3", deadline=utc_now() + timedelta(seconds=1))
    replies.send(late)
    replies.send(slow)
    late_reply = replies.wait(late.request_id)
    slow_reply = replies.wait(slow.request_id)
    assert late_reply.status == ReplyStatus.TIMEOUT
    assert late_reply.error is not None
    assert "deadline passed" in late_reply.error
    assert slow_reply.status == ReplyStatus.TIMEOUT
    assert slow_reply.error is not None
    assert "did not finish in time" in slow_reply.error
    assert slow_reply.latency_ms < 2500
    assert _turn_failed(topics, "late", late.request_id).kind == "deadline"
    assert _turn_failed(topics, "slow", slow.request_id).kind == "timeout"


def test_a_reply_names_its_turns_last_event_and_a_read_after_it_waits_for_the_fold(
    topics: Settings, worker: ChatWorker, replies: Replies
) -> None:
    """The header a store reads after (goaicore.store.turn_ends): the turn's last event,
    an assistant turn or the TurnFailed of a rejected request; a store's read right
    after its ask has the turn in the snapshot."""
    asked = new_chat_request("turn-end", "where does it end?")
    rejected = new_chat_request("turn-end", "and this?", tools=["teleport"])
    for request in (asked, rejected):
        replies.send(request)
        replies.wait(request.request_id)
    with HistoryReader(topics) as history:
        logged = list(history.logged_events("turn-end"))
    ends = [
        turn_end_of(replies.headers[r.request_id][0], topics.topic("events"))
        for r in (asked, rejected)
    ]
    assert all(end is not None for end in ends), replies.headers
    by_offset = {e.offset: e.event for e in logged}
    [turn, failed] = [by_offset[end.offset].body for end in ends if end is not None]
    assert isinstance(turn, AssistantTurn)
    assert turn.text == replies.wait(asked.request_id).text
    assert isinstance(failed, TurnFailed)
    assert failed.kind == "unknown-tool"
    assert ends[1] is not None
    assert ends[1].offset == logged[-1].offset

    async def ask_then_read() -> tuple[ChatReply, Any]:
        async with KafkaConversationStore(topics) as store:
            reply = await store.ask("turn-end", "once more", timeout=60)
            return reply, (await store.read("turn-end", history=False)).snapshot

    reply, snapshot = asyncio.run(ask_then_read())
    assert snapshot is not None
    assert snapshot.messages[-1].text == reply.text


def test_bad_requests_are_rejected_and_bad_records_become_dead_letters(
    topics: Settings, worker: ChatWorker, replies: Replies
) -> None:
    unknown = new_chat_request("bad", "hi", tools=["teleport"])
    empty = new_chat_request("bad", "   ")
    replies.send(unknown)
    replies.send(empty)
    replies.send_raw(b"bad", b"\x00 not a request")
    stray = new_chat_request("someone", "under another key")
    replies.send(stray, key=b"bad")
    assert replies.wait(unknown.request_id).status == ReplyStatus.REJECTED
    assert "teleport" in (replies.wait(unknown.request_id).error or "")
    assert replies.wait(empty.request_id).status == ReplyStatus.REJECTED
    assert "empty" in (replies.wait(empty.request_id).error or "")
    assert replies.wait(stray.request_id).status == ReplyStatus.REJECTED
    assert _turn_failed(topics, "bad", unknown.request_id).kind == "unknown-tool"
    assert _turn_failed(topics, "bad", empty.request_id).kind == "empty-text"
    # The worker is alive and still answers.
    ok = new_chat_request("bad", "and now?")
    replies.send(ok)
    assert replies.wait(ok.request_id).status == ReplyStatus.OK
    assert worker.alive()
    from goaicore.clients import DeadLetter
    from goaicore.kafka.connection import make_consumer, topic_partitions
    from goaicore.kafka.partition_reader import read_to_end

    consumer = make_consumer(topics)
    try:
        letters = [
            DeadLetter.from_record(r)
            for p in topic_partitions(consumer, topics.topic("dead-letters"))
            for r in read_to_end(consumer, p, settings=topics)
        ]
    finally:
        consumer.close()
    reasons = {(letter.topic, letter.reason) for letter in letters}
    assert (topics.topic("requests"), "bad-magic") in reasons
    assert (topics.topic("requests"), "key-mismatch") in reasons


def test_a_request_over_the_record_limit_is_a_dead_letter_and_a_rejection_never_run(
    topics: Settings, worker: ChatWorker, replies: Replies, llm: OpenAIServer
) -> None:
    """A producer that is not goaicore's sent a request larger than the record limit."""
    from kafka import KafkaProducer

    text = "tell me about " + "x" * topics.max_record_bytes
    request = new_chat_request("too-big", text)
    producer = KafkaProducer(
        bootstrap_servers=topics.require_bootstrap(),
        max_request_size=2 * topics.max_record_bytes,
    )
    try:
        producer.send(
            topics.topic("requests"), key=b"too-big", value=encode_chat_request(request)
        ).get(30)
    finally:
        producer.close()
    reply = replies.wait(request.request_id)
    assert reply.status == ReplyStatus.REJECTED
    assert reply.error is not None
    assert f"at most {topics.max_record_bytes:,} (GOAICORE_MAX_RECORD_BYTES)" in reply.error
    assert not [b for b in llm.bodies if "x" * 1000 in json.dumps(b)]  # never asked
    letters = _dead_letters(topics, "too-big")
    assert [(letter.topic, letter.reason) for letter in letters] == [
        (topics.topic("requests"), "too-large")
    ]
    ok = new_chat_request("too-big", "and a small one?")
    replies.send(ok)
    assert replies.wait(ok.request_id).text == "echo: and a small one?"


def _dead_letters(topics: Settings, key: str) -> list[Any]:
    return [letter for letter in all_dead_letters(topics) if letter.key == key.encode()]


def test_the_same_request_id_twice_runs_the_llm_once(
    topics: Settings, worker: ChatWorker, replies: Replies, llm: OpenAIServer
) -> None:
    request = new_chat_request("twice", "only once please")
    replies.send(request)
    replies.send(request)
    first = replies.wait(request.request_id, count=2)
    again = replies.seen[request.request_id][1]
    assert first == again
    assert len(_bodies_with(llm, "only once please")) == 1
    with HistoryReader(topics) as history:
        users = [e for e in history.events("twice") if isinstance(e.body, UserMessage)]
    assert len(users) == 1


def test_a_turns_events_reach_the_log_as_one_record_batch(
    topics: Settings, worker: ChatWorker, replies: Replies, kafka_broker: SessionBroker
) -> None:
    """The broker appends a batch whole: a turn is in the log entirely or not at all."""
    if kafka_broker.apache is None:
        pytest.skip("reads Apache Kafka's log files (the embedded profile sends a record a batch)")
    request = new_chat_request(
        "one-batch", 'call score_lookup {"team": "Hull"}', tools=["score_lookup"]
    )
    replies.send(request)
    assert replies.wait(request.request_id).status == ReplyStatus.OK
    with HistoryReader(topics) as history:
        turn = list(history.logged_events("one-batch"))
    assert [type(e.event.body) for e in turn] == [
        UserMessage,
        AssistantTurn,
        ToolResult,
        AssistantTurn,
    ]
    batches = stored_batches(kafka_broker.apache, topics.topic("events"), turn[0].partition)
    [batch] = [b for b in batches if b.holds(turn[0].offset)]
    assert (batch.base_offset, batch.last_offset) == (turn[0].offset, turn[-1].offset)
    assert batch.records == 4


def test_a_reply_is_stored_for_its_request_id_before_it_is_published(
    topics: Settings, worker: ChatWorker, replies: Replies
) -> None:
    """A client that has seen a reply gets that same reply again, from any worker: the
    replies table's changelog already holds it when the reply reaches the topic."""
    from kafka import TopicPartition

    from goaicore.kafka.connection import make_consumer
    from goaicore.kafka.partition_reader import read_to_end
    from goaicore.kafka.partitioner import partition_for
    from goaicore_store.codecs import RecentRepliesCodec
    from goaicore_store.topology import app_id

    changelog = f"{app_id(topics)}-replies-changelog"
    consumer = make_consumer(topics)
    try:
        for n in range(8):
            request = new_chat_request(f"stored-{n}", f"keep this one, {n}")
            replies.send(request)
            reply = replies.wait(request.request_id)
            at = partition_for(request.conversation_id, topics.partitions)
            partition = TopicPartition(changelog, at)
            stored = [
                RecentRepliesCodec().loads(r.value)
                for r in read_to_end(consumer, partition, settings=topics)
                if r.key == request.conversation_id.encode()
            ]
            assert stored, f"no stored replies for {request.conversation_id} yet"
            assert stored[-1].get(request.request_id) == reply
    finally:
        consumer.close()


async def test_async_clients_an_awaited_event_is_in_the_next_awaited_asks_prompt(
    topics: Settings, worker: ChatWorker, llm: OpenAIServer
) -> None:
    async with AsyncEventPublisher(topics) as publisher, AsyncChatClient(topics) as client:
        for n in range(5):
            conversation = f"async-ryw-{n}"
            await publisher.game_event(conversation, f"Player {n} opened the trapdoor")
            reply = await client.ask(conversation, f"what did I open, {n}?", timeout=60)
            assert (reply.status, reply.text) == (ReplyStatus.OK, f"echo: what did I open, {n}?")
            [body] = _bodies_with(llm, f"what did I open, {n}?")
            contents = [m.get("content") for m in body["messages"]]
            assert f"Player {n} opened the trapdoor" in contents
    async with AsyncHistoryReader(topics) as history:
        kinds = [type(e.body) async for e in history.events("async-ryw-0")]
    assert kinds == [GameEvent, UserMessage, AssistantTurn]


@pytest.mark.parametrize("streamed", [False, True], ids=["ask", "ask_stream"])
async def test_a_retry_sent_before_the_late_original_is_handled_gets_its_own_answer(
    topics: Settings, worker: ChatWorker, streamed: bool
) -> None:
    """The original's deadline passes while an earlier turn of its conversation runs; its
    retry (same request id) is sent before the worker reaches the original. The worker
    answers the original "timeout" (not final, not stored) and then runs the retry: the
    retry's ask takes its own answer, never the original's timeout."""
    conversation = f"late-retry-{'stream' if streamed else 'ask'}"
    async with AsyncChatClient(topics) as client:
        busy = asyncio.create_task(client.ask(conversation, "slow 4", timeout=60))
        await asyncio.sleep(0.5)  # the slow turn runs; the next two wait behind it
        with pytest.raises(ReplyTimeout) as timed_out:
            await client.ask(conversation, "where am I?", timeout=1)
        request_id = timed_out.value.request_id
        if streamed:
            items = [
                item
                async for item in client.ask_stream(
                    conversation, "where am I?", timeout=60, request_id=request_id
                )
            ]
            retried = items[-1]
            assert isinstance(retried, ChatReply)
        else:
            retried = await client.ask(
                conversation, "where am I?", timeout=60, request_id=request_id
            )
        assert (retried.status, retried.text) == (ReplyStatus.OK, "echo: where am I?"), retried
        assert (await busy).status == ReplyStatus.OK
    with HistoryReader(topics) as history:
        bodies = [e.body for e in history.events(conversation)]
    turns = [body for body in bodies if isinstance(body, (TurnFailed, AssistantTurn))]
    assert [type(body) for body in turns] == [AssistantTurn, TurnFailed, AssistantTurn]
    failed = turns[1]
    assert isinstance(failed, TurnFailed)
    assert (failed.kind, failed.request_id) == ("deadline", request_id)
