"""The auditor's commands: history --from-db, conversations, search, ledger, verify --db."""

from __future__ import annotations

import dataclasses
import json
import time
from datetime import timedelta
from typing import Any

import pytest

from goaicore.cli import main
from goaicore.config import Settings
from goaicore.projection import connect
from goaicore.records import MetadataSet, UserMessage, new_event
from goaicore.records.avro.api import decode_snapshot, encode_snapshot
from tests.projector.helpers import (
    ProjectorProcess,
    fold_logged,
    project,
    publish,
    publish_snapshots,
)
from tests.projector.sessions import START, game_session
from tests.store.workers import StoreWorker, wait_folded


@pytest.fixture
def cli(projection: Settings, monkeypatch: pytest.MonkeyPatch) -> Settings:
    """The environment a `goaicore` command run here reads: the test's topics and schema."""
    for name, value in {
        "KAFKA_BOOTSTRAP_SERVERS": projection.require_bootstrap(),
        "GOAICORE_BROKER_PROFILE": projection.broker_profile or "standard",
        "GOAICORE_TOPIC_PREFIX": projection.topic_prefix,
        "GOAICORE_PARTITIONS": str(projection.partitions),
        "DATABASE_URL": projection.require_database_url(),
        "GOAICORE_DB_SCHEMA": projection.db_schema,
        "GOAICORE_DATA_DIR": str(projection.data_dir),
    }.items():
        monkeypatch.setenv(name, value)
    return projection


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, list[str]]:
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out.splitlines() + captured.err.splitlines()


def _json(capsys: pytest.CaptureFixture[str], *argv: str, expect: int = 0) -> Any:
    """A command's --json document; it must exit with ``expect`` and write nothing else."""
    code = main([*argv, "--json"])
    captured = capsys.readouterr()
    assert (code, captured.err) == (expect, "")
    return json.loads(captured.out)


@pytest.fixture
def projected(cli: Settings) -> Settings:
    logged = publish(
        cli,
        [
            *game_session("p1"),
            new_event("p2", UserMessage(text="Meet at the stage door"), occurred_at=START),
        ],
    )
    publish_snapshots(cli, list(fold_logged(logged).values()))
    project(cli)
    return cli


def test_history_from_db_matches_the_log(
    projected: Settings, capsys: pytest.CaptureFixture[str]
) -> None:
    code, from_db = run(capsys, "history", "p1", "--from-db")
    assert code == 0
    code, from_log = run(capsys, "history", "p1")
    assert code == 0
    assert from_db == from_log
    assert from_db[-1] == "7 events"

    code, turns = run(
        capsys,
        "history",
        "p1",
        "--from-db",
        "--type",
        "ToolResult",
        "--since",
        (START + timedelta(minutes=1)).isoformat(),
    )
    assert code == 0
    assert len(turns) == 2
    assert "tool venues: Royal Hall; Harrogate Theatre" in turns[0]

    with pytest.raises(SystemExit):
        main(["history", "p1", "--from-db", "--type", "Nonsense"])
    assert "invalid choice: 'Nonsense'" in capsys.readouterr().err
    code, lines = run(capsys, "history", "p1", "--type", "UserMessage")
    assert (code, lines) == (2, ["goaicore: history: --type, --since and --until need --from-db"])

    code, db_json = run(capsys, "history", "p1", "--from-db", "--json")
    assert code == 0
    code, log_json = run(capsys, "history", "p1", "--json")
    assert code == 0
    from_db_document, from_log_document = (
        json.loads("\n".join(db_json)),
        json.loads("\n".join(log_json)),
    )
    assert from_db_document["events"] == from_log_document["events"]
    assert len(from_db_document["events"]) == 7


def test_conversations_search_and_ledger(
    projected: Settings, capsys: pytest.CaptureFixture[str]
) -> None:
    code, lines = run(capsys, "conversations")
    assert code == 0
    assert lines[1].split()[:4] == ["p1", "7", "6", "302"]
    assert lines[2].split()[:3] == ["p2", "1", "1"]
    assert lines[-1] == "2 conversations"
    code, lines = run(
        capsys, "conversations", "--since", (START + timedelta(minutes=3)).isoformat()
    )
    assert lines[-1] == "1 conversations"

    code, lines = run(capsys, "search", "stage doors")
    assert code == 0
    assert lines[0].startswith("p2 @")
    assert "[stage] [door]" in lines[0]
    assert lines[-1] == "1 matches"

    code, lines = run(capsys, "ledger", "p1")
    assert code == 0
    assert "openai/gpt-test prompt 120 completion 12 calls 1 cost $0.000001500" in lines[0]
    assert lines[-2:] == [
        "total: 3 turns, prompt 270, completion 32, cost $0.000003500 (1 turns without a cost)",
        "no price known for: offline/goaicore-offline (GOAICORE_PRICES adds prices)",
    ]
    code, lines = run(capsys, "ledger")
    assert lines[0].startswith("p1")
    assert lines[0].endswith("cost $0.000003500 (1 without a cost)")
    assert lines[-2:] == [
        "1 conversations",
        "no price known for: offline/goaicore-offline (GOAICORE_PRICES adds prices)",
    ]

    first_turn = run(capsys, "ledger", "p1")[1][0].split()[1]
    code, lines = run(capsys, "ledger", "p1", "--until", first_turn)
    assert lines[-1] == "total: 1 turns, prompt 120, completion 12, cost $0.000001500"
    code, lines = run(capsys, "ledger", "--until", first_turn)
    assert lines[0].split()[:4] == ["p1", "turns", "1", "prompt"]  # totals respect the filter
    code, lines = run(capsys, "ledger", "--since", "2999-01-01")
    assert lines == ["0 conversations"]

    listed = _json(capsys, "conversations")["conversations"]
    assert [(c["conversation_id"], c["event_count"], c["message_count"]) for c in listed] == [
        ("p1", 7, 6),
        ("p2", 1, 1),
    ]
    [hit] = _json(capsys, "search", "stage doors")["matches"]
    assert (hit["conversation_id"], hit["body_type"]) == ("p2", "UserMessage")
    assert "[stage] [door]" in hit["snippet"]
    book = _json(capsys, "ledger", "p1")
    assert book["unpriced"] == ["offline/goaicore-offline"]
    assert book["conversation_id"] == "p1"
    assert book["entries"][0]["cost_usd_nanos"] == 1500
    assert book["totals"]["turns"] == 3
    assert book["totals"]["turns_without_cost"] == 1
    [totals] = _json(capsys, "ledger")["conversations"]
    assert (totals["conversation_id"], totals["prompt_tokens"]) == ("p1", 270)
    with pytest.raises(SystemExit):
        main(["conversations", "--limit", "-1"])
    assert "must be at least 1, got -1" in capsys.readouterr().err


def test_verify_db_passes_then_names_a_tampered_field(
    projected: Settings, capsys: pytest.CaptureFixture[str]
) -> None:
    code, lines = run(capsys, "verify", "--db")
    assert code == 0, lines
    assert lines[-1].endswith(": 2 equal, 0 different, 0 pending")

    with connect(projected) as conn:
        row = conn.execute(
            "SELECT avro FROM conversation_snapshots WHERE conversation_id = 'p2'"
        ).fetchone()
        assert row is not None
        snapshot = decode_snapshot(bytes(row[0]))
        tampered = dataclasses.replace(snapshot, event_count=99)
        conn.execute(
            "UPDATE conversation_snapshots SET avro = %s WHERE conversation_id = 'p2'",
            (encode_snapshot(tampered),),
        )
    code, lines = run(capsys, "verify", "--db", "p2")
    assert code == 1
    assert lines[0].startswith("DIFFERENT p2 event_count: stored 99 refolded 1")
    assert lines[-1].endswith(": 0 equal, 1 different, 0 pending")

    report = _json(capsys, "verify", "--db", "p2", expect=1)
    assert report["against"] == "database"
    assert report["differences"] == [
        {"conversation_id": "p2", "field": "event_count", "stored": 99, "replayed": 1}
    ]

    code, lines = run(capsys, "verify", "--db", "nobody")
    assert code == 0
    assert lines[0] == "NO EVENTS nobody: no events of it are stored, so no snapshot to verify"
    assert lines[-1].endswith(": 0 equal, 0 different, 0 pending, 1 without events")


def test_audit_commands_before_any_projection_stop_with_one_line(
    cli: Settings, capsys: pytest.CaptureFixture[str]
) -> None:
    code, lines = run(capsys, "conversations")
    assert code == 3  # a configuration error: no projector has run on this schema
    assert lines == [
        f"goaicore: no projection in PostgreSQL schema {cli.db_schema!r} "
        "(start `goaicore projector`, or set GOAICORE_DB_SCHEMA)"
    ]


def test_store_worker_and_projector_agree(
    cli: Settings, capsys: pytest.CaptureFixture[str]
) -> None:
    """End to end: the store worker's snapshots, projected, equal a fold of the projected events."""
    logged = publish(cli, game_session("p1") + game_session("p2"))
    last = {event.conversation_id: position.offset for event, position in logged}
    worker = StoreWorker(cli).start()
    projector = ProjectorProcess(cli).start()
    try:
        wait_folded(cli, last, workers=(worker,))
        lines: list[str] = []
        for _ in range(100):
            code, lines = run(capsys, "verify", "--db", "p1", "p2")
            if code == 0 and lines[-1].endswith("2 equal, 0 different, 0 pending"):
                break
            time.sleep(0.3)
        else:
            raise AssertionError(f"{lines}\n{projector.log()}")
    finally:
        worker.stop()
        assert projector.stop() == 0, projector.log()


def test_conversations_are_listed_with_their_metadata_and_filtered_by_it(
    cli: Settings, capsys: pytest.CaptureFixture[str]
) -> None:
    logged = publish(
        cli,
        [
            new_event("m1", MetadataSet(title="Tavern hunt", owner="ada", tags=("quest", "eu"))),
            new_event("m2", MetadataSet(owner="bob", tags=("eu",))),
            new_event("m3", UserMessage(text="no metadata here")),
        ],
    )
    publish_snapshots(cli, list(fold_logged(logged).values()))
    project(cli)
    code, lines = run(capsys, "conversations", "--tag", "eu")
    assert code == 0
    shown = {line.split()[0]: line for line in lines[1:-1]}
    assert set(shown) == {"m1", "m2"}
    assert shown["m1"].endswith("'Tavern hunt' owner ada #eu #quest")
    assert shown["m2"].endswith("owner bob #eu")
    assert lines[-1] == "2 conversations"
    code, lines = run(capsys, "conversations", "--owner", "ada", "--title", "TAVERN")
    assert [line.split()[0] for line in lines[1:-1]] == ["m1"]
    listed = _json(capsys, "conversations", "--tag", "quest")["conversations"]
    assert [(c["title"], c["owner"], c["tags"]) for c in listed] == [
        ("Tavern hunt", "ada", ["eu", "quest"])
    ]
