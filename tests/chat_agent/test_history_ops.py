"""Undo, regenerate, rewind, fork and metadata through a real worker: events in the log,
folded by the worker, replayed and verified from the log alone."""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

import pytest

from goaicore.clients import ChatClient, EventPublisher, HistoryReader
from goaicore.config import Settings
from goaicore.records import (
    ConversationRewound,
    ConversationSnapshot,
    ForkOrigin,
    ReplyStatus,
    ToolResult,
    UserMessage,
    new_event,
    utc_now,
)
from goaicore.records.validation import InvalidInputError
from goaicore.replay.verify import verify_snapshot
from goaicore.store.history_operations import HistoryOperations, OperationRefused
from goaicore.testing import OpenAIServer
from tests.chat_agent.helpers import ChatWorker, snapshot_when
from tests.cli import goaicore
from tests.fold.conversations import fold_all
from tests.readme import run_blocks
from tests.store.workers import worker_env


def _prompt_of(llm: OpenAIServer, question: str) -> list[Any]:
    """The contents the latest LLM call ending with ``question`` was sent, after the
    worker's system prompt."""
    [*_, body] = [b for b in llm.bodies if b["messages"][-1].get("content") == question]
    system, *messages = body["messages"]
    assert system["role"] == "system"
    return [m.get("content") for m in messages]


def _texts(snapshot: ConversationSnapshot) -> list[str]:
    return [m.text for m in snapshot.messages]


def _verified(topics: Settings, snapshot: ConversationSnapshot) -> None:
    with HistoryReader(topics) as history:
        assert verify_snapshot(history, snapshot) == []


def test_undo_drops_the_last_exchange_and_the_next_turn_never_sees_it(
    topics: Settings, worker: ChatWorker, llm: OpenAIServer
) -> None:
    with ChatClient(topics) as client, HistoryOperations(topics) as ops:
        client.ask("undo-1", "first question", timeout=60)
        client.ask("undo-1", "regrettable question", timeout=60)
        undone = ops.undo("undo-1")
        assert undone.text == "regrettable question"
        assert undone.messages == 2
        reply = client.ask("undo-1", "third question", timeout=60)
    assert reply.text == "echo: third question"
    assert _prompt_of(llm, "third question") == [
        "first question",
        "echo: first question",
        "third question",
    ]
    snapshot = snapshot_when(topics, "undo-1", lambda s: s.event_count == 7)
    assert _texts(snapshot)[-2:] == ["third question", "echo: third question"]
    assert snapshot.events_by_type["ConversationRewound"] == 1
    with HistoryReader(topics) as history:
        bodies = [e.body for e in history.events("undo-1")]
    assert len(bodies) == 7  # the undone exchange stays in the log
    assert isinstance(bodies[4], ConversationRewound)
    _verified(topics, snapshot)


def test_regenerate_asks_the_last_question_again_on_the_history_before_it(
    topics: Settings, worker: ChatWorker, llm: OpenAIServer
) -> None:
    with ChatClient(topics) as client, HistoryOperations(topics) as ops:
        client.ask("regen-1", "hello", timeout=60)
        client.ask("regen-1", "tell me a story", timeout=60)
        calls = len(llm.bodies)
        reply = ops.regenerate("regen-1", client)
    assert (reply.status, reply.text) == (ReplyStatus.OK, "echo: tell me a story")
    assert len(llm.bodies) == calls + 1
    assert _prompt_of(llm, "tell me a story") == ["hello", "echo: hello", "tell me a story"]
    snapshot = snapshot_when(topics, "regen-1", lambda s: s.event_count == 7)
    assert _texts(snapshot) == ["hello", "echo: hello", "tell me a story", "echo: tell me a story"]
    _verified(topics, snapshot)
    # The undo went with its turn: the rewind, then the turn's events, in one batch, all
    # caused by the one request.
    with HistoryReader(topics) as history:
        logged = list(history.logged_events("regen-1"))[4:]
    kinds = [type(e.event.body).__name__ for e in logged]
    assert kinds == ["ConversationRewound", "UserMessage", "AssistantTurn"]
    assert [e.offset for e in logged] == list(range(logged[0].offset, logged[0].offset + 3))
    assert {e.event.causation_id for e in logged} == {reply.request_id}


def test_rewind_to_an_offset_and_a_refused_point_inside_a_tool_chain(
    topics: Settings, worker: ChatWorker
) -> None:
    with ChatClient(topics) as client:
        client.ask("rewind-1", "one", timeout=60)
        client.ask("rewind-1", 'call score_lookup {"team": "York"}', tools=["score_lookup"])
    with HistoryReader(topics) as history:
        logged = list(history.logged_events("rewind-1"))
    offsets = [e.offset for e in logged]
    [result_at] = [e.offset for e in logged if isinstance(e.event.body, ToolResult)]
    with HistoryOperations(topics) as ops:
        with pytest.raises(InvalidInputError, match="between a tool call and its results") as err:
            ops.rewind("rewind-1", result_at - 1)
        assert f"nearest until_offset that work: {offsets[2]} or {result_at}" in str(err.value)
        rewound = ops.rewind("rewind-1", offsets[1])
    assert rewound.messages == 2
    snapshot = snapshot_when(
        topics, "rewind-1", lambda s: s.events_by_type.get("ConversationRewound") == 1
    )
    assert _texts(snapshot) == ["one", "echo: one"]
    _verified(topics, snapshot)


def test_a_fork_starts_from_the_source_and_never_sees_its_later_events(
    topics: Settings, worker: ChatWorker, llm: OpenAIServer
) -> None:
    with ChatClient(topics) as client, EventPublisher(topics) as publisher:
        client.ask("fork-src", "shared question", timeout=60)
        cut = publisher.game_event("fork-src", "The dragon woke").offset
        publisher.game_event("fork-src", "Only the source sees this")
        with HistoryOperations(topics) as ops:
            forked = ops.fork("fork-src", "fork-new", before_offset=cut + 1)
            with pytest.raises(InvalidInputError, match="already has events"):
                ops.fork("fork-src", "fork-new")
        assert (forked.until_offset, forked.messages) == (cut, 3)
        publisher.game_event("fork-src", "Also only the source")
        client.ask("fork-new", "what happened?", timeout=60)
    assert _prompt_of(llm, "what happened?") == [
        "shared question",
        "echo: shared question",
        "The dragon woke",
        "what happened?",
    ]
    snapshot = snapshot_when(topics, "fork-new", lambda s: s.event_count == 3)
    assert snapshot.forked_from == ForkOrigin(
        conversation_id="fork-src", partition=forked.source_partition, until_offset=cut
    )
    _verified(topics, snapshot)


def test_metadata_is_set_changed_and_removed_by_events(
    topics: Settings, worker: ChatWorker
) -> None:
    with HistoryOperations(topics) as ops:
        ops.set_metadata("meta-1", title="The Harrogate run", owner="player-7", tags=["b", "a"])
        ops.set_metadata("meta-1", attributes={"region": "eu", "mood": "calm"})
        ops.set_metadata("meta-1", title="", attributes={"mood": None})
        with pytest.raises(InvalidInputError, match="a title of 201 characters"):
            ops.set_metadata("meta-1", title="t" * 201)
    snapshot = snapshot_when(topics, "meta-1", lambda s: s.event_count == 3)
    assert (snapshot.title, snapshot.owner, snapshot.tags) == (None, "player-7", ("a", "b"))
    assert snapshot.attributes == {"region": "eu"}
    _verified(topics, snapshot)


def test_operations_on_what_cannot_take_them_are_refused_with_the_reason(
    topics: Settings, worker: ChatWorker
) -> None:
    with HistoryOperations(topics) as ops, EventPublisher(topics) as publisher:
        with pytest.raises(InvalidInputError, match="no events"):
            ops.undo("never-seen")
        publisher.game_event("only-game", "Rain")
        with pytest.raises(InvalidInputError, match="nothing to undo"):
            ops.undo("only-game")
        with pytest.raises(InvalidInputError, match="until_offset must be"):
            ops.rewind("only-game", -2)
        with pytest.raises(InvalidInputError, match="new conversation id"):
            ops.fork("only-game", "only-game")
        with pytest.raises(InvalidInputError, match="no events"):
            ops.delete("never-seen")


def test_the_command_line_undoes_regenerates_rewinds_forks_and_sets_metadata(
    topics: Settings, worker: ChatWorker, llm: OpenAIServer
) -> None:
    assert goaicore(topics, "say", "cli-ops", "first").stdout == "echo: first\n"
    assert goaicore(topics, "say", "cli-ops", "second").returncode == 0
    regenerated = goaicore(topics, "regenerate", "cli-ops")
    assert (regenerated.returncode, regenerated.stdout) == (0, "echo: second\n"), regenerated.stderr
    undone = goaicore(topics, "undo", "cli-ops", "--json")
    assert undone.returncode == 0, undone.stderr
    assert json.loads(undone.stdout)["undone"]["text"] == "second"
    rewound = goaicore(topics, "rewind", "cli-ops", "--to-offset", "-1")
    assert rewound.returncode == 0, rewound.stderr
    assert "(0 messages kept)" in rewound.stdout
    with HistoryReader(topics) as history:
        first_turn_end = [e.offset for e in history.logged_events("cli-ops")][1]
    forked = goaicore(
        topics, "fork", "cli-ops", "--at", str(first_turn_end + 1), "--to", "cli-fork"
    )
    assert forked.returncode == 0, forked.stderr
    assert "(2 messages)" in forked.stdout
    meta = goaicore(
        topics, "meta", "cli-fork", "--title", "Branch", "--tags", "x, y", "--set", "k=v"
    )
    assert meta.returncode == 0, meta.stderr
    snapshot = snapshot_when(topics, "cli-fork", lambda s: s.event_count == 2)
    assert (_texts(snapshot), snapshot.title, snapshot.tags) == (
        ["first", "echo: first"],
        "Branch",
        ("x", "y"),
    )
    assert snapshot.attributes == {"k": "v"}
    listed = goaicore(topics, "history", "cli-ops").stdout
    assert "rewound[undo] to offset" in listed
    assert "rewound[rewind] to offset -1: 0 messages" in listed
    refused = goaicore(topics, "fork", "cli-ops", "--to", "cli-fork")
    assert refused.returncode == 2
    assert refused.stderr.strip() == (
        "goaicore: 'cli-fork' already has events: fork into a new conversation"
    )
    bad = goaicore(topics, "meta", "cli-fork", "--set", "novalue")
    assert bad.returncode == 2
    assert "expected KEY=VALUE" in bad.stderr
    deleted = goaicore(topics, "delete", "cli-fork", "--reason", "player asked")
    assert deleted.returncode == 0, deleted.stderr
    assert deleted.stdout.startswith("deleted cli-fork at ")
    snapshot = snapshot_when(topics, "cli-fork", lambda s: s.deleted)
    assert (snapshot.messages, snapshot.title, snapshot.tags) == ((), None, ())
    again = goaicore(topics, "delete", "cli-fork")
    assert again.returncode == 2
    assert "was deleted" in again.stderr
    assert "deleted: player asked" in goaicore(topics, "history", "cli-fork").stdout


def test_the_readme_example_runs_as_written(
    topics: Settings,
    worker: ChatWorker,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    section = "History operations: undo, rewind, fork, metadata, deletion"
    assert run_blocks(section, worker_env(topics), monkeypatch) == 1
    printed = capsys.readouterr().out.splitlines()
    assert printed == [
        "undone: Sing me a song",
        "ok echo: Where is the tavern?",
        "forked 2 messages",
    ]


def test_a_change_the_fold_refuses_is_reported_and_changes_nothing(
    topics: Settings, worker: ChatWorker
) -> None:
    """A change the conversation as it stands refuses is refused before anything is
    appended; one the fold refuses after (computed on a history since changed) changes
    nothing and is reported."""
    with HistoryOperations(topics) as ops, EventPublisher(topics) as publisher:
        ops.set_metadata("refused-1", attributes={f"a{n}": "x" for n in range(20)})
        with pytest.raises(OperationRefused, match="33 attributes"):
            ops.set_metadata("refused-1", attributes={f"b{n}": "y" for n in range(13)})
        publisher.user_message("refused-1", "hello")
        first = publisher.user_message("refused-1", "again")
        # A rewind computed before "again" landed: its basis is not the latest event.
        with HistoryReader(topics) as history:
            stale_basis = [e.event.event_id for e in history.logged_events("refused-1")][-2]
        publisher.publish(
            "refused-1",
            ConversationRewound(until_offset=first.offset - 2, basis_event_id=stale_basis),
        )
    snapshot = snapshot_when(topics, "refused-1", lambda s: s.event_count == 4)
    assert _texts(snapshot) == ["hello", "again"]
    assert len(snapshot.attributes) == 20
    assert snapshot.events_by_type["MetadataSet"] == 1  # the refused change: not appended
    assert "computed on a history since changed" in snapshot.anomalies[-1]
    _verified(topics, snapshot)


def test_a_change_applied_with_a_size_note_is_not_taken_for_a_refusal(topics: Settings) -> None:
    """Metadata that pushes a full history over its bound is applied, the oldest message
    leaving with a size-policy note about that event: the operation succeeded."""
    with EventPublisher(topics) as publisher:
        for n in range(9):
            publisher.user_message("near-bound", f"{n} " + "x" * 96_000)
    attributes = {f"k{n:02d}": "v" * 1024 for n in range(32)}
    with HistoryOperations(topics) as ops:
        position = ops.set_metadata("near-bound", attributes=attributes)
    with HistoryReader(topics) as history:
        logged = list(history.logged_events("near-bound"))
    assert logged[-1].offset == position.offset
    snapshot = fold_all([(e.event, e.position) for e in logged])
    assert snapshot is not None
    assert snapshot.attributes == attributes
    assert "size policy dropped the oldest" in snapshot.anomalies[-1]


def test_a_retention_policy_lists_idle_conversations_and_erases_them_only_when_told(
    topics: Settings, worker: ChatWorker
) -> None:
    long_ago = utc_now() - timedelta(days=40)
    with EventPublisher(topics) as publisher:
        publisher.publish(
            "idle-old", new_event("idle-old", UserMessage(text="hi"), occurred_at=long_ago)
        )
        publisher.user_message("idle-new", "hello")
    snapshot_when(topics, "idle-old", lambda s: s.event_count == 1)
    snapshot_when(topics, "idle-new", lambda s: s.event_count == 1)

    listed = goaicore(topics, "erase", "--idle-days", "30", "--json")
    assert listed.returncode == 0, listed.stderr
    answer = json.loads(listed.stdout)
    assert "idle-old" in answer["idle"]
    assert "idle-new" not in answer["idle"]
    assert answer["erased"] == []
    assert snapshot_when(topics, "idle-old", lambda s: True).erased_before is None

    done = goaicore(topics, "erase", "--idle-days", "30", "--yes", "--json")
    assert done.returncode == 0, done.stderr
    assert "idle-old" in json.loads(done.stdout)["erased"]
    erased = snapshot_when(topics, "idle-old", lambda s: s.erased_before is not None)
    assert erased.messages == ()
    again = goaicore(topics, "erase", "--idle-days", "30", "--json")
    assert "idle-old" not in json.loads(again.stdout)["idle"]  # erased, nothing since

    for bad in (["--idle-days", "0"], ["idle-old", "--idle-days", "30"], ["idle-old", "--yes"]):
        refused = goaicore(topics, "erase", *bad)
        assert refused.returncode == 2, (bad, refused.stdout)
