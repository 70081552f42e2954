"""The auditor's queries: history by type and time, the list, search, the ledger, verify."""

from __future__ import annotations

import dataclasses
from datetime import timedelta

import pytest

from goaicore.config import Settings
from goaicore.projection import (
    ProjectionMissingError,
    connect,
    conversations,
    history,
    ledger,
    ledger_totals,
    require_projection,
    search,
    verify_db,
)
from goaicore.records import UserMessage, new_event
from goaicore.records.avro.api import decode_snapshot, encode_snapshot
from tests.projector.helpers import fold_logged, project, publish, publish_snapshots
from tests.projector.sessions import START, game_session


@pytest.fixture
def projected(projection: Settings) -> Settings:
    logged = publish(
        projection,
        game_session("p1")
        + game_session("p2", START + timedelta(days=1))
        + [new_event("quiet", UserMessage(text="hello"), occurred_at=START - timedelta(days=5))],
    )
    publish_snapshots(projection, list(fold_logged(logged).values()))
    project(projection)
    return projection


def test_history_in_log_order_filtered_by_type_and_time(projected: Settings) -> None:
    with connect(projected) as conn:
        everything = history(conn, "p1")
        assert [e.body_type for e in everything] == [
            "GameEvent",
            "UserMessage",
            "AssistantTurn",
            "ToolResult",
            "AssistantTurn",
            "TurnFailed",
            "AssistantTurn",
        ]
        assert [e.offset for e in everything] == sorted(e.offset for e in everything)
        assert everything[0].event().body.text == "Player checked in at Harrogate Theatre"  # type: ignore[union-attr]
        assert everything[0].body["attributes"] == {"venue": "Harrogate Theatre"}

        turns = history(conn, "p1", types=["AssistantTurn", "ToolResult"])
        assert [e.body_type for e in turns] == ["AssistantTurn", "ToolResult"] + [
            "AssistantTurn"
        ] * 2
        window = history(
            conn, "p1", since=START + timedelta(minutes=2), until=START + timedelta(minutes=4)
        )
        assert [e.body_type for e in window] == ["AssistantTurn", "ToolResult", "AssistantTurn"]
        assert history(conn, "p1", limit=2) == everything[:2]
        assert history(conn, "nobody") == []
        with pytest.raises(ValueError, match="unknown event type Nonsense"):
            history(conn, "p1", types=["Nonsense"])


def test_conversation_list_has_counts_and_last_activity(projected: Settings) -> None:
    with connect(projected) as conn:
        listed = conversations(conn)
        assert [c.conversation_id for c in listed] == ["p2", "p1", "quiet"]
        p2 = listed[0]
        assert (p2.event_count, p2.message_count) == (7, 6)
        assert p2.first_occurred_at == START + timedelta(days=1)
        assert p2.last_occurred_at == START + timedelta(days=1, minutes=6)
        assert (p2.prompt_tokens, p2.completion_tokens, p2.deleted) == (270, 32, False)
        recent = conversations(conn, since=START - timedelta(days=1))
        assert [c.conversation_id for c in recent] == ["p2", "p1"]
        assert [c.conversation_id for c in conversations(conn, limit=1)] == ["p2"]


def test_full_text_search_stems_ranks_and_filters(projected: Settings) -> None:
    with connect(projected) as conn:
        hits = search(conn, "theatre")  # finds "theatres" and "Theatre"
        assert {h.body_type for h in hits} == {
            "GameEvent",
            "UserMessage",
            "ToolResult",
            "AssistantTurn",
        }
        assert {h.conversation_id for h in hits} == {"p1", "p2"}
        assert all("[" in h.snippet for h in hits)
        only = search(conn, '"royal hall"', conversation_id="p2")
        assert sorted((h.conversation_id, h.body_type) for h in only) == [
            ("p2", "AssistantTurn"),
            ("p2", "ToolResult"),
        ]
        assert search(conn, "theatre -station", limit=50)
        assert search(conn, "provider did not answer")[0].body_type == "TurnFailed"
        assert search(conn, "zeppelin") == []


def test_search_snippets_keep_every_character_of_the_text(projection: Settings) -> None:
    texts = {
        "brackets": "[stage] [door] is here",
        "lead": "[stage] left, then the door",
        "twice": "the doorway, and then the (door) at last",
    }
    publish(projection, [new_event(cid, UserMessage(text=text)) for cid, text in texts.items()])
    project(projection)
    with connect(projection) as conn:
        found = {h.conversation_id: h.snippet for h in search(conn, "door")}
        lead = search(conn, "stage", conversation_id="lead")
    assert found["brackets"] == "[stage] [[door]] is here"
    assert "the ([door]) at" in found["twice"]  # the word, not the doorway before it
    assert [h.snippet for h in lead] == ["[[stage]] left, then the door"]


def test_ledger_of_tokens_and_cost(projected: Settings) -> None:
    with connect(projected) as conn:
        book = ledger(conn, "p1")
        assert [(e.model, e.prompt_tokens, e.cost_usd_nanos) for e in book.entries] == [
            ("gpt-test", 120, 1_500),
            ("gpt-test", 150, 2_000),
            ("goaicore-offline", 0, None),
        ]
        assert dataclasses.astuple(book.totals) == ("p1", 3, 270, 32, 302, 2, 3_500, 1)
        totals = ledger_totals(conn)
        assert [t.conversation_id for t in totals] == ["p1", "p2"]
        assert [
            t.conversation_id for t in ledger_totals(conn, since=START + timedelta(hours=1))
        ] == ["p2"]


def test_verify_finds_equal_tampered_and_pending_snapshots(projected: Settings) -> None:
    with connect(projected) as conn:
        clean = verify_db(conn, projected.topic("events"))
        assert (clean.checked, clean.differences, clean.pending) == (3, [], [])

        row = conn.execute(
            "SELECT avro FROM conversation_snapshots WHERE conversation_id = 'p1'"
        ).fetchone()
        assert row is not None
        original = decode_snapshot(bytes(row[0]))
        tampered = dataclasses.replace(original, prompt_tokens=original.prompt_tokens + 1)
        conn.execute(
            "UPDATE conversation_snapshots SET avro = %s WHERE conversation_id = 'p1'",
            (encode_snapshot(tampered),),
        )
        report = verify_db(conn, projected.topic("events"))
        assert [(d.conversation_id, d.field) for d in report.differences] == [
            ("p1", "prompt_tokens")
        ]
        conn.execute(
            "UPDATE projector_positions SET next_offset = 0 WHERE topic = %s",
            (projected.topic("events"),),
        )
        assert sorted(verify_db(conn, projected.topic("events"), ["p2", "quiet"]).pending) == [
            "p2",
            "quiet",
        ]
        unknown = verify_db(conn, projected.topic("events"), ["nobody"])
        assert (unknown.checked, unknown.differences, unknown.unknown) == (0, [], ["nobody"])


def test_queries_on_a_schema_without_projection_say_so(projection: Settings) -> None:
    with connect(projection) as conn, pytest.raises(ProjectionMissingError, match="projector"):
        require_projection(conn, projection.db_schema)
