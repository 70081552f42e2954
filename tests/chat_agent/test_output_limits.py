"""A worker's own records stay under the record limit whatever the LLM or a tool returns."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from goaicore.clients import HistoryReader
from goaicore.config import Settings
from goaicore.records import AssistantTurn, ReplyStatus, ToolResult, new_chat_request
from goaicore.records.avro.api import encode_event
from goaicore.replay.verify import verify_snapshot
from goaicore.testing import OpenAIServer
from tests.chat_agent.helpers import ChatWorker, Replies, llm_env, snapshot_when, wait_http

BIG = 3_000_000  # over three times the default record limit (900,000 bytes)


@pytest.fixture(scope="module")
def worker(topics: Settings, llm: OpenAIServer) -> Iterator[ChatWorker]:
    tools = "tests.chat_agent.big_tools:registry"
    process = ChatWorker(topics, GOAICORE_TOOLS=tools, **llm_env(llm)).start()
    try:
        wait_http(process.url)
        yield process
    finally:
        process.stop()


def test_a_huge_tool_result_is_cut_before_the_model_sees_it(
    topics: Settings, worker: ChatWorker, replies: Replies, llm: OpenAIServer
) -> None:
    request = new_chat_request(
        "big-tool", f'call big_result {{"size": {BIG}}}', tools=["big_result"]
    )
    replies.send(request)
    reply = replies.wait(request.request_id, timeout=120)
    assert reply.status == ReplyStatus.OK, reply.error
    [seen] = [b["messages"][-1] for b in llm.bodies if b["messages"][-1].get("role") == "tool"]
    assert len(seen["content"]) < topics.max_record_bytes
    assert "tool result truncated to fit the limit" in seen["content"]
    with HistoryReader(topics) as history:
        events = list(history.events("big-tool"))
    assert all(len(encode_event(e)) <= topics.max_record_bytes for e in events)
    [result] = [e.body for e in events if isinstance(e.body, ToolResult)]
    assert result.content == seen["content"]  # the log holds what the model saw
    assert "the model sees the first" in worker.log()
    assert worker.alive()


def test_a_huge_llm_reply_is_cut_in_the_log_and_the_reply(
    topics: Settings, worker: ChatWorker, replies: Replies
) -> None:
    request = new_chat_request("big-reply", f"big {BIG}")
    replies.send(request)
    reply = replies.wait(request.request_id, timeout=120)
    assert reply.status == ReplyStatus.OK, reply.error
    assert reply.text is not None
    assert reply.text.startswith("bbbb")
    assert "truncated to fit the record size limit" in reply.text
    with HistoryReader(topics) as history:
        events = list(history.events("big-reply"))
    assert all(len(encode_event(e)) <= topics.max_record_bytes for e in events)
    [turn] = [e.body for e in events if isinstance(e.body, AssistantTurn)]
    assert "truncated to fit the record size limit" in turn.text
    assert turn.raw_json is None  # the provider's JSON went first: the text is what was kept
    snapshot = snapshot_when(topics, "big-reply", lambda s: s.event_count == 2)
    with HistoryReader(topics) as history:
        assert verify_snapshot(history, snapshot) == []
    again = new_chat_request("big-reply", "and now?")
    replies.send(again)
    assert replies.wait(again.request_id, timeout=120).text == "echo: and now?"
    assert "was over the" in worker.log()
    assert worker.alive()
