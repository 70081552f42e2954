"""The conversations the console tests look at, logged on the test's broker and projected.

``quest`` holds one of every kind of record, with text a page must escape; ``tampered``
has a stored snapshot that differs from the fold of its events; ``bulk-NN`` fill more
than one page of the list. A record that does not decode is published to ``quest``, with
the dead letter the store worker would write for it.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import timedelta

from goaicore.config import Settings
from goaicore.records import (
    AssistantTurn,
    ChatReply,
    CompactionApplied,
    ConversationErased,
    ConversationEvent,
    ConversationForked,
    ConversationRewound,
    GameEvent,
    MetadataSet,
    ReplyStatus,
    SnapshotMessage,
    ToolCall,
    ToolResult,
    TurnFailed,
    Usage,
    UserMessage,
    new_event,
    utc_now,
)
from goaicore.records.avro.api import encode_chat_reply
from tests.projector.helpers import (
    bad_events,
    fold_logged,
    produce,
    project,
    publish,
    publish_snapshots,
)

QUEST = "quest <1>"
TAMPERED = "tampered"
OPS = "ops <2>"
FORK = "fork <3>"
ERASED = "erased <4>"
OPS_TITLE = "The <ops> run"
BULK = [f"bulk-{n:02d}" for n in range(55)]
SCRIPT = "<script>alert('pwned')</script> where is the <b>tavern</b>?"
TOOL_ARGUMENTS = '{"place": "<tavern>"}'
ANSWER = "The tavern is <i>north</i> & the inn is east."
GAME_TEXT = "Player entered the <tavern>"
SUMMARY = "They asked about the <tavern>."


@dataclass(frozen=True)
class Audited:
    """The projected settings, and the positions the tests move to."""

    settings: Settings
    quest_offsets: list[int]  # the quest's events, in log order
    conversations: int


def quest_events() -> list[ConversationEvent]:
    start = utc_now() - timedelta(hours=2)

    def at(minutes: int) -> dict[str, object]:
        return {"occurred_at": start + timedelta(minutes=minutes), "source": "test"}

    usage = Usage(prompt_tokens=120, completion_tokens=30, total_tokens=150)
    call = ToolCall(id="call_1", name="find_place", arguments=TOOL_ARGUMENTS)
    return [
        new_event(QUEST, UserMessage(text=SCRIPT), causation_id="r1", **at(0)),  # type: ignore[arg-type]
        new_event(
            QUEST,
            AssistantTurn(
                tool_calls=(call,),
                usage=usage,
                provider="openai",
                model="gpt-test",
                cost_usd_nanos=1_500_000,
            ),
            causation_id="r1",
            **at(1),  # type: ignore[arg-type]
        ),
        new_event(
            QUEST,
            ToolResult(tool_call_id="call_1", name="find_place", content='{"where": "<north>"}'),
            causation_id="r1",
            **at(1),  # type: ignore[arg-type]
        ),
        new_event(
            QUEST,
            AssistantTurn(
                text=ANSWER,
                usage=usage,
                provider="openai",
                model="gpt-test",
                cost_usd_nanos=2_500_000,
            ),
            causation_id="r1",
            **at(2),  # type: ignore[arg-type]
        ),
        new_event(
            QUEST,
            GameEvent(kind="enter", text=GAME_TEXT, attributes={"room": "<main hall>"}),
            **at(3),  # type: ignore[arg-type]
        ),
        new_event(QUEST, UserMessage(text="summarize please"), causation_id="r2", **at(4)),  # type: ignore[arg-type]
        new_event(
            QUEST,
            CompactionApplied(
                strategy="summarize",
                first_index=0,
                last_index=3,
                removed_count=4,
                tokens_before=900,
                tokens_after=120,
                summary=SUMMARY,
            ),
            causation_id="r2",
            **at(4),  # type: ignore[arg-type]
        ),
        new_event(
            QUEST,
            AssistantTurn(text="Done.", usage=usage, provider="openai", model="unpriced-model"),
            causation_id="r2",
            **at(5),  # type: ignore[arg-type]
        ),
        new_event(
            QUEST,
            TurnFailed(request_id="r3", kind="timeout", message="the turn took too long"),
            causation_id="r3",
            **at(6),  # type: ignore[arg-type]
        ),
    ]


def ops_events() -> list[ConversationEvent]:
    """A conversation with every history operation, and a fork of it."""
    kept = SnapshotMessage(role="user", text="keep <this>", event_id="e-1")
    return [
        new_event(OPS, UserMessage(text="keep <this>"), event_id="e-1"),
        new_event(OPS, UserMessage(text="regret <that>")),
        new_event(OPS, MetadataSet(title=OPS_TITLE, tags=("beta", "<x>"), attributes={"k": "v"})),
        new_event(OPS, ConversationRewound(until_offset=0, messages=(kept,), reason="undo")),
        new_event(
            FORK,
            ConversationForked(
                source_conversation_id=OPS, source_partition=0, until_offset=0, messages=(kept,)
            ),
        ),
        new_event(ERASED, UserMessage(text="my address is <12 Mill Lane>")),
        new_event(ERASED, ConversationErased(reason="the player asked")),
    ]


def replies() -> list[ChatReply]:
    usage = Usage(prompt_tokens=240, completion_tokens=60, total_tokens=300, llm_calls=2)
    return [
        ChatReply(
            request_id="r1",
            conversation_id=QUEST,
            status=ReplyStatus.OK,
            text=ANSWER,
            usage=usage,
            latency_ms=812,
        ),
        ChatReply(
            request_id="r3",
            conversation_id=QUEST,
            status=ReplyStatus.TIMEOUT,
            error="timeout: the turn took too long",
            latency_ms=30000,
        ),
    ]


def log_and_project(settings: Settings) -> Audited:
    """Publish everything, write the snapshots as the worker would, and project it all."""
    events = quest_events()
    events += [new_event(TAMPERED, UserMessage(text=f"tampered {n}")) for n in range(3)]
    events += [new_event(conversation, UserMessage(text="hello")) for conversation in BULK]
    events += ops_events()
    logged = publish(settings, events)
    snapshots = fold_logged(logged)
    snapshots[TAMPERED] = replace(snapshots[TAMPERED], event_count=99)
    publish_snapshots(settings, list(snapshots.values()))
    produce(
        settings,
        "replies",
        [(r.conversation_id.encode(), encode_chat_reply(r)) for r in replies()],
    )
    bad_events(settings, [(QUEST.encode(), b"not an event")], "bad-magic")
    project(settings)  # and reads back its dead letter
    quest = [p.offset for e, p in logged if e.conversation_id == QUEST]
    return Audited(settings, quest, len(snapshots))
