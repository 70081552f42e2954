"""A worker killed after answering, before its offsets are committed: no second LLM run;
a client's retry with the same request id after the kill runs none either."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta

import pytest

from goaicore.clients import ChatClient, HistoryReader, ReplyTimeout
from goaicore.config import Settings
from goaicore.kafka.partitioner import partition_for
from goaicore.records import ReplyStatus, UserMessage, new_chat_request, utc_now
from goaicore.testing import OpenAIServer
from tests.chat_agent.helpers import ChatWorker, Replies, llm_env


def _same_partition_pair(partitions: int) -> tuple[str, str]:
    names = [f"crash-{n}" for n in range(100)]
    first = names[0]
    second = next(
        n for n in names[1:] if partition_for(n, partitions) == partition_for(first, partitions)
    )
    return first, second


@pytest.fixture
def first_worker(topics: Settings, llm: OpenAIServer) -> Iterator[ChatWorker]:
    process = ChatWorker(topics, "first", **llm_env(llm)).start()
    yield process
    process.stop()


def test_a_request_redelivered_after_a_crash_gets_its_stored_reply(
    topics: Settings, first_worker: ChatWorker, replies: Replies, llm: OpenAIServer
) -> None:
    slow_conversation, conversation = _same_partition_pair(topics.partitions)
    # The slow request holds its partition's commit back, so the answered one after it
    # is certainly not committed when the worker dies.
    slow = new_chat_request(slow_conversation, "slow 4")
    answered = new_chat_request(conversation, "answer me once")
    replies.send(slow)
    replies.send(answered)
    first_reply = replies.wait(answered.request_id, timeout=90)
    first_worker.kill9()
    assert first_reply.status == ReplyStatus.OK

    second = ChatWorker(topics, "second", **llm_env(llm)).start()
    try:
        again = replies.wait(answered.request_id, count=2, timeout=90)
        assert replies.seen[answered.request_id][1] == again == first_reply
        assert replies.wait(slow.request_id, timeout=90).status == ReplyStatus.OK
        later = new_chat_request(conversation, "and after the crash?")
        replies.send(later)
        assert replies.wait(later.request_id, timeout=60).text == "echo: and after the crash?"
    finally:
        second.stop()
    calls = [b for b in llm.bodies if b["messages"][-1].get("content") == "answer me once"]
    assert len(calls) == 1, "the LLM ran twice for one request id"
    with HistoryReader(topics) as history:
        users = [
            e.body.text for e in history.events(conversation) if isinstance(e.body, UserMessage)
        ]
    assert users == ["answer me once", "and after the crash?"]


def test_asking_again_with_the_id_of_a_timed_out_ask_after_a_kill_runs_no_second_turn(
    topics: Settings, first_worker: ChatWorker, replies: Replies, llm: OpenAIServer
) -> None:
    conversation, question = "retry-after-kill", "slow 3"
    with ChatClient(topics) as client:
        # The client stops waiting after 1 s; the turn may run on for 2 minutes.
        with pytest.raises(ReplyTimeout) as timed_out:
            client.ask(conversation, question, timeout=1, deadline=utc_now() + timedelta(minutes=2))
        request_id = timed_out.value.request_id
        assert request_id is not None
        assert request_id in str(timed_out.value)
        first = replies.wait(request_id, timeout=90)  # the turn finished, nobody waiting
        first_worker.kill9()
        second = ChatWorker(topics, "second-retry", **llm_env(llm)).start()
        try:
            again = client.ask(conversation, question, timeout=90, request_id=request_id)
        finally:
            second.stop()
    assert again == first
    assert (again.request_id, again.status, again.text) == (
        request_id,
        ReplyStatus.OK,
        "echo: slow 3",
    )
    calls = [b for b in llm.bodies if b["messages"][-1].get("content") == question]
    assert len(calls) == 1, "the LLM ran twice for one request id"
    with HistoryReader(topics) as history:
        users = [
            e.body.text for e in history.events(conversation) if isinstance(e.body, UserMessage)
        ]
    assert users == [question]
