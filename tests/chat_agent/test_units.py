"""The chat agent's parts without a broker: dispatch order, checks, turns, recovery, tools."""

from __future__ import annotations

import asyncio
import dataclasses
import gc
from datetime import timedelta

import pytest

from goaicore.config import Settings
from goaicore.conversation.providers import OfflineProvider
from goaicore.conversation.providers.choice import Providers
from goaicore.conversation.snapshot_messages import to_chat_messages
from goaicore.conversation.validation import validate_history
from goaicore.fold import fold
from goaicore.records import (
    AssistantTurn,
    ChatRequest,
    CompactionApplied,
    ConversationEvent,
    ConversationSnapshot,
    GameEvent,
    LogPosition,
    ReplyStatus,
    ToolResult,
    TurnFailed,
    UserMessage,
    new_chat_request,
    new_event,
    utc_now,
)
from goaicore.store.idempotency import KEEP_REPLIES, RecentReplies, recover_from_log
from goaicore.store.limits import OutputLimits
from goaicore.store.ordering import KeyedDispatcher
from goaicore.store.turns import TurnSettings, request_only_event_id, run_request, turn_event_id
from goaicore.testing import OpenAIServer
from goaicore_store.chat import game_tools
from goaicore_store.chat.tools import DEFAULT_TOOLS, ToolsConfigError, as_registry, load_tools
from goaicore_store.codecs import RecentRepliesCodec

REGISTRY = load_tools("goaicore_store.chat.game_tools:registry")
SETTINGS = TurnSettings(system_prompt="Be brief", turn_timeout=10, context_tokens=16000)


def _folded(
    events: list[ConversationEvent], snapshot: ConversationSnapshot | None = None
) -> ConversationSnapshot:
    offset = snapshot.last_position.offset + 1 if snapshot and snapshot.last_position else 0
    for n, event in enumerate(events):
        snapshot = fold(snapshot, event, LogPosition(partition=0, offset=offset + n))
    assert snapshot is not None
    return snapshot


def test_dispatcher_keeps_each_keys_order_and_runs_keys_concurrently() -> None:
    done: dict[str, list[int]] = {}
    running = 0
    most = 0

    async def handle(item: tuple[str, int]) -> None:
        nonlocal running, most
        running += 1
        most = max(most, running)
        await asyncio.sleep(0.001 * ((item[1] * 7) % 5))  # later items often finish first
        done.setdefault(item[0], []).append(item[1])
        running -= 1

    async def main() -> None:
        dispatcher: KeyedDispatcher[tuple[str, int]] = KeyedDispatcher(handle, 4, 16)
        for n in range(10):
            for key in "abcdef":
                await dispatcher.submit(key, (key, n))
        await dispatcher.join()
        assert dispatcher.waiting == 0

    asyncio.run(main())
    assert done == {key: list(range(10)) for key in "abcdef"}
    assert 1 < most <= 4


def test_dispatcher_survives_a_failing_item() -> None:
    seen: list[int] = []

    async def handle(item: int) -> None:
        if item == 1:
            raise RuntimeError("boom")
        seen.append(item)

    async def main() -> None:
        dispatcher: KeyedDispatcher[int] = KeyedDispatcher(handle, 2, 8)
        for n in range(3):
            await dispatcher.submit("k", n)
        await dispatcher.join()

    asyncio.run(main())
    assert seen == [0, 2]


@pytest.mark.parametrize(
    ("request_", "status", "kind"),
    [
        (new_chat_request("c", "  "), ReplyStatus.REJECTED, "empty-text"),
        (new_chat_request("c", "hi", tools=["nope"]), ReplyStatus.REJECTED, "unknown-tool"),
        (
            new_chat_request("c", "hi", deadline=utc_now() - timedelta(seconds=5)),
            ReplyStatus.TIMEOUT,
            "deadline",
        ),
    ],
)
def test_bad_requests_fail_with_one_turn_failed_event(
    request_: ChatRequest, status: ReplyStatus, kind: str
) -> None:
    outcome = asyncio.run(run_request(request_, None, OfflineProvider(), REGISTRY, SETTINGS))
    assert outcome.reply.status == status
    assert outcome.reply.error
    [event] = outcome.events
    assert isinstance(event.body, TurnFailed)
    assert event.body.kind == kind
    assert event.causation_id == request_.request_id


def test_unknown_tool_message_names_what_is_offered() -> None:
    request = new_chat_request("c", "hi", tools=["score_lookup", "teleport"])
    outcome = asyncio.run(run_request(request, None, OfflineProvider(), REGISTRY, SETTINGS))
    assert outcome.reply.error is not None
    assert "teleport" in outcome.reply.error
    assert "location_info, score_lookup" in outcome.reply.error


def test_a_turn_becomes_events_with_stable_ids_usage_and_the_request_as_cause() -> None:
    request = new_chat_request("c", "What's the score_lookup for Leeds?")
    outcome = asyncio.run(run_request(request, None, OfflineProvider(), REGISTRY, SETTINGS))
    assert outcome.reply.status == ReplyStatus.OK
    bodies = [e.body for e in outcome.events]
    assert [type(b) for b in bodies] == [UserMessage, AssistantTurn, ToolResult, AssistantTurn]
    assert [e.event_id for e in outcome.events] == [
        turn_event_id("c", request.request_id, i) for i in range(4)
    ]
    assert {e.causation_id for e in outcome.events} == {request.request_id}
    result, final = bodies[2], bodies[3]
    assert isinstance(result, ToolResult)
    assert isinstance(final, AssistantTurn)
    assert '"points": 42' in result.content
    assert final.usage is not None
    assert final.model == "goaicore-offline"
    assert outcome.reply.text == final.text
    assert outcome.reply.usage is not None
    assert outcome.reply.usage.llm_calls == 2


def test_compaction_is_appended_where_it_happened_and_the_fold_replays_it() -> None:
    events = [new_event("c", GameEvent(kind="tick", text=f"tick {n} " * 40)) for n in range(30)]
    snapshot = _folded(events)
    tight = TurnSettings(system_prompt=None, turn_timeout=10, context_tokens=400)
    request = new_chat_request("c", "hello")
    outcome = asyncio.run(run_request(request, snapshot, OfflineProvider(), REGISTRY, tight))
    assert outcome.reply.status == ReplyStatus.OK
    kinds = [type(e.body) for e in outcome.events]
    assert kinds == [UserMessage, CompactionApplied, AssistantTurn]
    after = _folded(outcome.events, snapshot)
    assert after.anomalies == ()
    assert len(after.messages) < len(snapshot.messages)
    assert after.messages[-1].text == outcome.reply.text


def test_llm_error_fails_the_turn_and_keeps_its_usage_out_of_history() -> None:
    with OpenAIServer() as server:
        server.error(400, "no thanks")
        provider = Providers(Settings(env={}, openai_base_url=server.base_url)).get()
        request = new_chat_request("c", "hello")
        outcome = asyncio.run(run_request(request, None, provider, REGISTRY, SETTINGS))
    assert outcome.reply.status == ReplyStatus.ERROR
    assert outcome.reply.error is not None
    assert "no thanks" in outcome.reply.error
    assert [type(e.body) for e in outcome.events] == [TurnFailed]


def test_the_workers_providers_call_over_aiohttp_and_close_before_the_loop_does(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with OpenAIServer() as server:
        server.reply("hello back")
        settings = Settings(env={}, openai_base_url=server.base_url)

        async def turn() -> str | None:
            providers = Providers(settings, transport="aiohttp")
            request = new_chat_request("c", "hello")
            outcome = await run_request(request, None, providers.get(), REGISTRY, SETTINGS)
            await providers.aclose()  # as the worker does before Faust closes its loop
            return outcome.reply.text

        loop = asyncio.new_event_loop()  # closed as Faust closes it: no asyncgen shutdown
        try:
            assert loop.run_until_complete(turn()) == "hello back"
        finally:
            loop.close()
    gc.collect()
    assert not [r for r in caplog.records if "Unclosed" in r.getMessage()]


def test_recovery_answers_a_complete_turn_from_the_log() -> None:
    request = new_chat_request("c", "What's the score_lookup for Leeds?")
    outcome = asyncio.run(run_request(request, None, OfflineProvider(), REGISTRY, SETTINGS))
    snapshot = _folded(outcome.events)
    recovered = recover_from_log(request, snapshot)
    assert recovered is not None
    assert recovered.reply.status == ReplyStatus.OK
    assert recovered.reply.text == outcome.reply.text
    assert recovered.events == []
    assert recover_from_log(new_chat_request("c", "other"), snapshot) is None


def test_a_turn_logged_with_request_only_ids_is_still_recovered() -> None:
    request = new_chat_request("c", "What's the score_lookup for Leeds?")
    outcome = asyncio.run(run_request(request, None, OfflineProvider(), REGISTRY, SETTINGS))
    parts = range(len(outcome.events))
    assert [e.event_id for e in outcome.events] == [
        turn_event_id("c", request.request_id, i) for i in parts
    ]
    earlier = [  # as a release that derived ids from the request id alone logged it
        dataclasses.replace(e, event_id=request_only_event_id(request.request_id, i))
        for i, e in zip(parts, outcome.events, strict=True)
    ]
    recovered = recover_from_log(request, _folded(earlier))
    assert recovered is not None
    assert recovered.reply.text == outcome.reply.text
    assert recovered.events == []
    elsewhere = {turn_event_id("d", request.request_id, i) for i in parts}
    assert not elsewhere & {e.event_id for e in outcome.events}


def test_recovery_closes_a_turn_cut_short_so_history_stays_valid() -> None:
    request = new_chat_request("c", "What's the score_lookup for Leeds?")
    outcome = asyncio.run(run_request(request, None, OfflineProvider(), REGISTRY, SETTINGS))
    snapshot = _folded(outcome.events[:2])  # the user message and the call, no result
    recovered = recover_from_log(request, snapshot)
    assert recovered is not None
    assert recovered.reply.status == ReplyStatus.ERROR
    assert [type(e.body) for e in recovered.events] == [ToolResult, TurnFailed]
    closed = _folded(recovered.events, snapshot)
    assert closed.anomalies == ()
    validate_history(to_chat_messages(closed.messages), "openai")
    # Appending the closing events twice changes nothing: their ids are stable.
    assert _folded(recovered.events, closed).messages == closed.messages


def test_recent_replies_keep_the_latest_and_round_trip() -> None:
    from goaicore.records import ChatReply

    replies = RecentReplies()
    for n in range(300):
        replies = replies.with_reply(
            ChatReply(request_id=f"r{n}", conversation_id="c", status=ReplyStatus.OK, text=str(n)),
            max_bytes=900_000,
        )
    assert len(replies.entries) == KEEP_REPLIES
    assert replies.get(f"r{299 - KEEP_REPLIES}") is None
    assert replies.get(f"r{300 - KEEP_REPLIES}") is not None
    codec = RecentRepliesCodec()
    back = codec.loads(codec.dumps(replies))
    assert back == replies
    reply = back.get("r299")
    assert reply is not None
    assert reply.text == "299"


def test_tools_registry_loads_lists_dicts_and_functions() -> None:
    assert set(REGISTRY) == {"score_lookup", "location_info"}
    assert load_tools(DEFAULT_TOOLS) == REGISTRY  # what a worker offers when none are named

    def shout(text: str) -> str:
        """Say it louder.

        Args:
            text: What to say.
        """
        return text.upper()

    assert set(as_registry({"a": shout, "b": game_tools.score_lookup})) == {
        "shout",
        "score_lookup",
    }
    with pytest.raises(ToolsConfigError, match="cannot import"):
        load_tools("no.such.module:registry")
    with pytest.raises(ToolsConfigError, match="has no 'nothing'"):
        load_tools("goaicore_store.chat.game_tools:nothing")
    with pytest.raises(ToolsConfigError, match="two tools are named"):
        as_registry([shout, shout])
    with pytest.raises(ToolsConfigError, match="list, tuple or dict"):
        as_registry("score_lookup")


def test_provider_choice_follows_the_settings() -> None:
    assert Providers(Settings(env={})).backend == "offline"
    assert "offline" in Providers(Settings(env={})).label
    assert Providers(Settings(env={}, anthropic_api_key="k")).backend == "anthropic"
    both = Providers(Settings(env={}, anthropic_api_key="k", openai_api_key="o", model="m1"))
    assert (both.backend, both.default_model) == ("openai", "m1")
    assert both.get() is both.get()
    assert both.get("other").model == "other"


def test_recent_replies_stay_under_their_byte_bound_and_keep_the_newest() -> None:
    from goaicore.records import ChatReply

    limits = OutputLimits.for_record_limit(900_000)
    codec = RecentRepliesCodec()
    replies = RecentReplies()
    for n in range(40):  # 40 replies of 30 KB: far over one record, were all kept before
        reply = ChatReply(
            request_id=f"r{n}", conversation_id="c", status=ReplyStatus.OK, text="t" * 30_000
        )
        replies = replies.with_reply(limits.fit_reply(reply), limits.replies_table_bytes)
        assert len(codec.dumps(replies)) <= limits.replies_table_bytes
        assert replies.get(f"r{n}") is not None
    assert replies.get("r0") is None


def test_an_enormous_reply_is_cut_to_fit_publishing_and_storing_it() -> None:
    from goaicore.records import ChatReply
    from goaicore.records.avro.api import encode_chat_reply

    limits = OutputLimits.for_record_limit(900_000)
    huge = ChatReply(
        request_id="r", conversation_id="c", status=ReplyStatus.OK, text="é" * 2_000_000
    )
    fitted = limits.fit_reply(huge)
    assert len(encode_chat_reply(fitted)) <= limits.reply_bytes
    assert fitted.text is not None
    assert "truncated to fit the record size limit" in fitted.text
    stored = RecentReplies().with_reply(fitted, limits.replies_table_bytes)
    assert stored.get("r") == fitted
    assert len(RecentRepliesCodec().dumps(stored)) <= limits.replies_table_bytes


def test_a_request_this_process_answered_is_not_answered_again_after_a_rebalance() -> None:
    """A rebalance hands a partition back from its last commit: the same record read
    again is acknowledged without a second reply; a new record (a client's retry with
    the same request id) is answered again."""
    import asyncio
    from types import SimpleNamespace
    from typing import Any

    from goaicore_store.chat.agent import ChatAgent

    answered: list[int] = []

    class Counting(ChatAgent):
        async def _answer(self, message: Any, request: Any) -> None:
            answered.append(message.offset)

    agent = Counting(None, None, None)  # type: ignore[arg-type]

    def message(offset: int) -> Any:
        return SimpleNamespace(topic="requests", partition=1, offset=offset, value=b"")

    async def run() -> None:
        await agent.process(message(7))
        await agent.process(message(7))  # read again after a rebalance
        await agent.process(message(8))  # another record: a retry

    asyncio.run(run())
    assert answered == [7, 8]


def test_a_request_is_tried_again_for_the_brokers_absence_alone() -> None:
    from aiokafka.errors import (  # type: ignore[import-untyped]
        KafkaTimeoutError,
        NodeNotReadyError,
        TopicAuthorizationFailedError,
    )

    from goaicore.errors import BrokerError
    from goaicore.kafka.aio_connection import broker_down
    from goaicore.store.errors import not_acknowledged

    wrapped = BrokerError("Kafka: NodeNotReadyError")
    wrapped.__cause__ = NodeNotReadyError()
    timed_out = KafkaTimeoutError()
    timed_out.__context__ = asyncio.CancelledError()
    assert broker_down(NodeNotReadyError())
    assert broker_down(wrapped)
    assert broker_down(timed_out)
    assert broker_down(not_acknowledged(5.0, request_id="r1"))
    assert not broker_down(TopicAuthorizationFailedError())
    assert not broker_down(ValueError("a bad request"))
