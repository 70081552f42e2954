"""The projector writes every event and the latest snapshot, once, and never stops on bad input."""

from __future__ import annotations

import threading

import psycopg
import pytest

from goaicore.config import Settings
from goaicore.projection import LATEST_VERSION, MIGRATIONS, connect, migrate
from goaicore.projection.db import ForeignProjectionError, PositionConflictError
from goaicore.projection.projector import Projector
from goaicore.records import ConversationDeleted, UserMessage, new_event
from goaicore.records.avro.api import encode_event
from tests.projector.helpers import (
    ProjectorProcess,
    all_dead_letters,
    fold_logged,
    produce,
    project,
    publish,
    publish_snapshots,
    query,
)
from tests.projector.sessions import game_session


def test_events_and_latest_snapshots_become_rows(projection: Settings) -> None:
    logged = publish(projection, game_session("p1") + game_session("p2"))
    snapshots = fold_logged(logged)
    publish_snapshots(projection, list(snapshots.values()))
    project(projection)

    rows = query(
        projection,
        "SELECT topic_partition, log_offset, event_id, conversation_id, body_type, occurred_at,"
        " source, body, avro FROM conversation_events ORDER BY conversation_id, log_offset",
    )
    assert len(rows) == 14
    by_position = {(r[0], r[1]): r for r in rows}
    for event, position in logged:
        row = by_position[(position.partition, position.offset)]
        assert row[2:7] == (
            event.event_id,
            event.conversation_id,
            type(event.body).__name__,
            event.occurred_at,
            "game",
        )
        assert bytes(row[8]) == encode_event(event)
    tool_call = next(r for r in rows if r[4] == "AssistantTurn" and r[7]["tool_calls"])
    assert tool_call[7]["tool_calls"] == [
        {"id": "c1", "name": "venues", "arguments": '{"near": "station"}'}
    ]
    assert tool_call[7]["usage"]["prompt_tokens"] == 120

    stored = query(
        projection,
        "SELECT conversation_id, last_partition, last_offset, event_count"
        " FROM conversation_snapshots ORDER BY 1",
    )
    assert [(s[0], s[2], s[3]) for s in stored] == [
        (conv, snapshots[conv].last_position.offset, 7)  # type: ignore[union-attr]
        for conv in ("p1", "p2")
    ]
    listing = query(
        projection, "SELECT conversation_id, event_count, message_count FROM conversations"
    )
    assert sorted(listing) == [("p1", 7, 6), ("p2", 7, 6)]


def test_a_later_snapshot_replaces_the_row_and_a_tombstone_deletes_it(projection: Settings) -> None:
    logged = publish(projection, game_session("p1") + game_session("gone"))
    first = fold_logged(logged[:3])["p1"]
    publish_snapshots(projection, [first, *fold_logged(logged).values()])
    project(projection)
    produce(projection, "snapshots", [(b"gone", None)])
    project(projection)
    assert query(projection, "SELECT conversation_id, event_count FROM conversation_snapshots") == [
        ("p1", 7)
    ]


def test_positions_move_with_the_rows_and_a_restart_writes_nothing_twice(
    projection: Settings,
) -> None:
    publish(projection, game_session("p1"))
    project(projection)
    publish(projection, game_session("p1"))  # the same words, new event ids
    project(projection)
    project(projection)
    assert query(
        projection, "SELECT count(*), count(DISTINCT event_id) FROM conversation_events"
    ) == [(14, 14)]
    assert query(projection, "SELECT event_count FROM conversations") == [(14,)]
    positions = dict(
        (p, o)
        for t, p, o in query(
            projection, "SELECT topic, topic_partition, next_offset FROM projector_positions"
        )
        if t == projection.topic("events")
    )
    assert sum(positions.values()) == 14


def test_a_republished_event_is_a_second_row_at_its_own_position(projection: Settings) -> None:
    event = new_event("p1", UserMessage(text="once"))
    publish(projection, [event, event])
    project(projection)
    rows = query(projection, "SELECT event_id, log_offset FROM conversation_events ORDER BY 2")
    assert [r[0] for r in rows] == [event.event_id, event.event_id]
    assert rows[0][1] != rows[1][1]


def test_bad_records_are_skipped_once_dead_lettered_and_the_projection_goes_on(
    projection: Settings,
) -> None:
    before = publish(projection, game_session("p1"))
    good = new_event("p1", UserMessage(text="after the bad ones"))
    produce(
        projection,
        "events",
        [
            (b"p1", b"not avro"),
            (b"p1", b""),
            (b"someone-else", encode_event(good)),  # key is not the conversation id
        ],
    )
    produce(projection, "snapshots", [(b"p1", b"\xc3\x01 unknown schema")])
    after = publish(projection, [good, new_event("p1", UserMessage(text="nul \x00 inside"))])
    publish_snapshots(projection, list(fold_logged(before + after).values()))
    projector = project(projection)

    # The bad records of events are the store worker's dead letters: the projector
    # counts them; the bad snapshot (no worker sets it aside) is the projector's.
    assert projector.skipped == {"bad-magic": 1, "empty": 1, "key-mismatch": 1}
    assert projector.dead_lettered == 1
    texts = [
        r[0]
        for r in query(
            projection,
            "SELECT message_text FROM conversation_events WHERE body_type = 'UserMessage'"
            " ORDER BY log_offset",
        )
    ]
    assert texts[-2:] == ["after the bad ones", "nul \ufffd inside"]
    assert query(projection, "SELECT event_count FROM conversations") == [(9,)]
    assert query(projection, "SELECT event_count FROM conversation_snapshots") == [(9,)]

    letters = all_dead_letters(projection)
    assert [(letter.reason, letter.topic, letter.consumer) for letter in letters] == [
        ("unknown-fingerprint", projection.topic("snapshots"), "goaicore-projector")
    ]


def test_ids_that_differ_only_in_nul_and_u_fffd_are_never_one_conversation(
    projection: Settings,
) -> None:
    # PostgreSQL stores NUL as U+FFFD: a record under an id holding NUL, which another
    # producer can write but no caller can give, is set aside instead of merging.
    unnamed = new_event("nulx\x00y", UserMessage(text="under an id with NUL"))
    produce(projection, "events", [(b"nulx\x00y", encode_event(unnamed))])
    publish(projection, [new_event("nulx\ufffdy", UserMessage(text="under U+FFFD"))])
    projector = project(projection)
    assert projector.skipped == {"invalid-conversation-id": 1}
    assert query(projection, "SELECT conversation_id, event_count FROM conversations") == [
        ("nulx\ufffdy", 1)
    ]


def test_migrations_run_twice_and_concurrently_apply_once(projection: Settings) -> None:
    with connect(projection) as conn:
        assert migrate(conn, projection.db_schema) == [m.version for m in MIGRATIONS]
        assert migrate(conn, projection.db_schema) == []
    other = projection.with_overrides(db_schema=f"{projection.db_schema}_b")
    results: list[list[int]] = []

    def start() -> None:
        with connect(other) as conn:
            results.append(migrate(conn, other.db_schema))

    threads = [threading.Thread(target=start) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    try:
        assert sorted(results) == [[], [], [], [m.version for m in MIGRATIONS]]
        assert query(other, "SELECT max(version), count(*) FROM schema_migrations") == [
            (LATEST_VERSION, len(MIGRATIONS))
        ]
    finally:
        with psycopg.connect(projection.require_database_url(), autocommit=True) as conn:
            conn.execute(f"DROP SCHEMA {other.db_schema} CASCADE")


def test_a_schema_holding_other_topics_is_refused(projection: Settings, settings: Settings) -> None:
    publish(projection, game_session("p1"))
    project(projection)
    stranger = projection.with_overrides(topic_prefix=f"{projection.topic_prefix}-other")
    from goaicore.kafka import ensure_topics

    ensure_topics(stranger)
    with pytest.raises(ForeignProjectionError, match="GOAICORE_DB_SCHEMA"):
        Projector(stranger).start()


def test_a_cleared_projection_is_projected_again_from_the_start(projection: Settings) -> None:
    from goaicore.projection.clear import clear_projection

    publish(projection, game_session("p1"))
    project(projection)
    project(projection)  # a restart clears nothing and doubles nothing
    assert query(projection, "SELECT count(*) FROM conversation_events") == [(7,)]
    with connect(projection) as conn:
        cleared = clear_projection(conn, projection.db_schema, projection.topic_prefix)
    assert cleared.rows["conversation_events"] == 7
    assert query(projection, "SELECT count(*) FROM conversation_events") == [(0,)]
    project(projection)
    assert query(projection, "SELECT count(*) FROM conversation_events") == [(7,)]
    assert query(projection, "SELECT event_count FROM conversations") == [(7,)]


def test_clearing_a_schema_of_another_prefix_is_refused(projection: Settings) -> None:
    from goaicore.projection.clear import clear_projection

    publish(projection, game_session("p1"))
    project(projection)
    with connect(projection) as conn, pytest.raises(ForeignProjectionError, match="nothing"):
        clear_projection(conn, projection.db_schema, f"{projection.topic_prefix}-other")
    assert query(projection, "SELECT count(*) FROM conversation_events") == [(7,)]


def test_a_second_projector_waits_until_the_first_stops(projection: Settings) -> None:
    publish(projection, game_session("p1"))
    first = Projector(projection).start()
    stop = threading.Event()
    second = Projector(projection)
    waiting = threading.Thread(target=second.start, args=(stop,))
    waiting.start()
    try:
        waiting.join(2.5)
        assert waiting.is_alive(), "the second projector did not wait for the lock"
        first.drain()
        first.close()
        waiting.join(10)
        assert not waiting.is_alive()
        assert second.started
        second.drain()
    finally:
        stop.set()
        first.close()
        second.close()
    assert query(projection, "SELECT count(*) FROM conversation_events") == [(7,)]


def test_deleted_conversations_keep_their_rows(projection: Settings) -> None:
    logged = publish(projection, [*game_session("p1"), new_event("p1", ConversationDeleted())])
    publish_snapshots(projection, list(fold_logged(logged).values()))
    project(projection)
    assert query(projection, "SELECT deleted, event_count FROM conversation_snapshots") == [
        (True, 8)
    ]
    assert query(projection, "SELECT count(*) FROM conversation_events") == [(8,)]


def test_projector_process_stops_cleanly_on_sigterm(projection: Settings) -> None:
    publish(projection, game_session("p1"))
    process = ProjectorProcess(projection).start()
    try:
        _wait_for_rows(projection, 7, process)
    finally:
        code = process.stop()
    assert code == 0, process.log()


def _wait_for_rows(
    settings: Settings, count: int, process: ProjectorProcess, timeout: float = 60
) -> None:
    import time

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert process.process is not None
        if process.process.poll() is not None:
            raise AssertionError(f"projector exited {process.process.returncode}:\n{process.log()}")
        try:
            if query(settings, "SELECT count(*) FROM conversation_events") == [(count,)]:
                return
        except psycopg.errors.UndefinedTable:
            pass
        time.sleep(0.2)
    raise AssertionError(f"not {count} rows in {timeout} s:\n{process.log()}")


def test_a_row_postgresql_refuses_is_set_aside_and_the_batch_goes_on(
    projection: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    import goaicore.projection.rows

    monkeypatch.setattr(goaicore.projection.rows, "clean", lambda text: text)  # let NUL through
    publish(
        projection,
        [
            new_event("p1", UserMessage(text="before")),
            new_event("p1", UserMessage(text="nul \x00 inside")),
            new_event("p1", UserMessage(text="after")),
        ],
    )
    projector = project(projection)
    assert projector.dead_lettered == 1
    assert [letter.reason for letter in all_dead_letters(projection)] == ["refused-by-database"]
    rows = query(projection, "SELECT message_text FROM conversation_events ORDER BY log_offset")
    assert rows == [("before",), ("after",)]
    assert query(projection, "SELECT event_count FROM conversations") == [(2,)]


def test_a_log_that_disagrees_with_the_projection_stops_it_with_a_clear_error(
    projection: Settings,
) -> None:
    publish(projection, game_session("p1"))
    project(projection)
    with connect(projection) as conn:  # as if the topic had been recreated
        conn.execute("UPDATE projector_positions SET next_offset = 0")
    projector = Projector(projection).start()
    try:
        with pytest.raises(PositionConflictError, match="goaicore projection clear --schema"):
            projector.drain()
    finally:
        projector.close()


def test_a_failed_write_loses_nothing_and_a_later_drain_sees_new_events(
    projection: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Batches are written while the next is read: a write that fails moves the reader
    back to the last written positions, so stepping on writes every row exactly once."""
    import goaicore.projection.projector as projector_module

    publish(projection, game_session("p1") + game_session("p2") + game_session("p3"))
    from goaicore.projection.writer import write_batch

    calls = 0

    def failing_second(*args: object, **kwargs: object) -> None:
        nonlocal calls
        calls += 1
        if calls == 2:
            raise psycopg.OperationalError("the server went away (injected)")
        write_batch(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(projector_module, "write_batch", failing_second)
    projector = Projector(projection, batch_size=4).start()
    try:
        with pytest.raises(psycopg.OperationalError, match="injected"):
            projector.drain()
        projector.drain()  # the same projector steps on after the failure
        assert query(projection, "SELECT count(*) FROM conversation_events") == [(21,)]
        publish(projection, game_session("p4"))
        projector.drain()  # a drain sees what was published before it began
    finally:
        projector.close()
    assert calls > 3
    rows = query(
        projection,
        "SELECT conversation_id, count(*), count(DISTINCT log_offset) FROM conversation_events"
        " GROUP BY 1 ORDER BY 1",
    )
    assert rows == [(f"p{n}", 7, 7) for n in range(1, 5)]
    assert query(projection, "SELECT sum(event_count) FROM conversations") == [(28,)]


def test_closing_after_a_failed_write_still_closes_everything(
    projection: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    import sys

    import goaicore.projection.projector as projector_module

    def failing(*args: object, **kwargs: object) -> None:
        raise psycopg.OperationalError("the server went away (injected)")

    publish(projection, game_session("p1"))
    monkeypatch.setattr(projector_module, "write_batch", failing)
    interval = sys.getswitchinterval()
    projector = Projector(projection).start()
    assert sys.getswitchinterval() == projector_module.SWITCH_INTERVAL
    assert projector.step(timeout_ms=5000) > 0  # handed to the writer, which fails
    with pytest.raises(psycopg.OperationalError, match="injected"):
        projector.close()
    assert sys.getswitchinterval() == interval
    assert not projector.started
    locks = "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory'"
    assert query(projection, locks) == [(0,)]  # its connection is closed: the lock is free


def test_the_switch_interval_is_short_while_any_projector_runs() -> None:
    import sys

    from goaicore.projection.projector import SWITCH_INTERVAL, _ShortSwitchInterval

    before = sys.getswitchinterval()
    _ShortSwitchInterval.enter()
    _ShortSwitchInterval.enter()  # a second projector in the same process
    _ShortSwitchInterval.leave()  # the first one closes
    assert sys.getswitchinterval() == SWITCH_INTERVAL
    _ShortSwitchInterval.leave()
    assert sys.getswitchinterval() == before
