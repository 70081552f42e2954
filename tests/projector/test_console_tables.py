"""What the auditor's console reads: conversation counters, dead letters and chat replies,
projected exactly once beside the events, and a schema projected before them upgraded."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from types import SimpleNamespace

import pytest

from goaicore.config import Settings
from goaicore.kafka.dead_letters import DeadLetterWriter
from goaicore.projection import connect, migrate, replies_of
from goaicore.projection.rows import EVENT_COLUMNS, MESSAGE_TYPES, event_row
from goaicore.records import (
    ChatReply,
    CompactionApplied,
    ConversationEvent,
    LogPosition,
    ReplyStatus,
    TurnFailed,
    Usage,
    UserMessage,
    new_event,
)
from goaicore.records.avro.api import encode_chat_reply, encode_event
from tests.projector.helpers import (
    produce_at,
    project,
    publish,
    publish_replies,
    query,
    read_topic,
)
from tests.projector.sessions import START, game_session

T_MS = 1_772_366_400_000  # 2026-03-01T12:00:00Z, as a record timestamp
T = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)


def _record_time(timestamp_ms: int) -> datetime:
    return datetime.fromtimestamp(timestamp_ms // 1000, UTC) + timedelta(
        milliseconds=timestamp_ms % 1000
    )


def _compaction(conversation_id: str, at: datetime) -> ConversationEvent:
    body = CompactionApplied(strategy="summary", first_index=0, last_index=2, summary="earlier")
    return new_event(conversation_id, body, occurred_at=at)


def _failure(conversation_id: str, at: datetime) -> ConversationEvent:
    body = TurnFailed(request_id="r-late", kind="error", message="the model refused")
    return new_event(conversation_id, body, occurred_at=at)


def test_failed_turns_and_compactions_are_counted_with_the_events(projection: Settings) -> None:
    later = START + timedelta(hours=1)
    publish(
        projection,
        [
            *game_session("p1"),  # one TurnFailed
            _compaction("p1", later),
            _failure("p1", later),
            new_event("calm", UserMessage(text="hello")),
        ],
    )
    project(projection)
    counters = "SELECT conversation_id, event_count, failed_turns, compactions FROM conversations"
    assert sorted(query(projection, counters)) == [("calm", 1, 0, 0), ("p1", 9, 2, 1)]

    publish(projection, [_compaction("p1", later), _compaction("calm", later)])
    project(projection)  # a later batch adds to the stored counters
    assert sorted(query(projection, counters)) == [("calm", 2, 0, 1), ("p1", 10, 2, 2)]


def _as_version_1(
    settings: Settings, logged: Sequence[tuple[ConversationEvent, LogPosition]]
) -> None:
    """The tables as the projector of migration 1 left them after projecting ``logged``."""
    import goaicore.projection.migrations as migrations

    with connect(settings) as conn:
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(migrations, "MIGRATIONS", migrations.MIGRATIONS[:1])
            assert migrate(conn, settings.db_schema) == [1]
        with conn.cursor() as cur:
            columns = ", ".join(EVENT_COLUMNS)
            with cur.copy(f"COPY conversation_events ({columns}) FROM STDIN") as copy:
                for event, p in logged:
                    copy.write_row(event_row(p.partition, p.offset, event, encode_event(event)))
        conn.execute(
            "INSERT INTO conversations (conversation_id, topic_partition, event_count,"
            " message_count, first_occurred_at, last_occurred_at, last_offset)"
            " SELECT conversation_id, max(topic_partition), count(*),"
            " count(*) FILTER (WHERE body_type = ANY(%s)), min(occurred_at), max(occurred_at),"
            " max(log_offset) FROM conversation_events GROUP BY conversation_id",
            (sorted(MESSAGE_TYPES),),
        )
        read: dict[int, int] = {}
        for _, p in logged:
            read[p.partition] = max(read.get(p.partition, 0), p.offset + 1)
        for topic in ("events", "snapshots"):
            for partition in range(settings.partitions):
                conn.execute(
                    "INSERT INTO projector_positions (topic, topic_partition, next_offset)"
                    " VALUES (%s, %s, %s)",
                    (
                        settings.topic(topic),
                        partition,
                        read.get(partition, 0) if topic == "events" else 0,
                    ),
                )


def test_a_schema_of_migration_1_upgrades_backfills_and_reads_the_new_topics_from_the_start(
    projection: Settings,
) -> None:
    later = START + timedelta(hours=1)
    before = publish(
        projection, [*game_session("p1"), _compaction("p1", later), *game_session("p2")]
    )
    reply = ChatReply(request_id="r1", conversation_id="p1", status=ReplyStatus.OK, text="hi")
    publish_replies(projection, [reply])  # published before the upgrade
    _as_version_1(projection, before)
    publish(projection, [_failure("p1", later + timedelta(minutes=1))])

    project(projection)

    assert query(projection, "SELECT version FROM schema_migrations ORDER BY 1") == [
        (1,),
        (2,),
        (3,),
    ]
    assert sorted(
        query(
            projection,
            "SELECT conversation_id, event_count, failed_turns, compactions FROM conversations",
        )
    ) == [("p1", 9, 2, 1), ("p2", 7, 1, 0)]  # p1: one failure backfilled, one projected
    assert query(projection, "SELECT count(*) FROM conversation_events") == [(16,)]
    with connect(projection) as conn:
        assert [(r.request_id, r.text) for r in replies_of(conn, "p1")] == [("r1", "hi")]
    topics = query(projection, "SELECT DISTINCT topic FROM projector_positions ORDER BY 1")
    assert [t for (t,) in topics] == sorted(
        projection.topic(t) for t in ("events", "snapshots", "replies", "dead-letters")
    )


def test_dead_letters_are_projected_once_with_their_origin_and_never_loop(
    projection: Settings,
) -> None:
    publish(projection, game_session("p1"))
    # A bad reply: the projector's to set aside (a bad event is the store worker's).
    [bad] = produce_at(projection, "replies", [(b"p1", b"not avro")])
    # One from another consumer, whose key is not UTF-8.
    elsewhere = SimpleNamespace(
        topic=projection.topic("requests"), partition=1, offset=5, key=b"\xff\xfe", value=b"x"
    )
    with DeadLetterWriter(projection, "goaicore-store") as writer:
        writer.forward(elsewhere, "bad-magic", "not one of ours")
    # One that goaicore did not write: no origin, a partition that is no number, a NUL.
    produce_at(
        projection,
        "dead-letters",
        [(b"p1", b"odd")],
        timestamp_ms=T_MS,
        headers=[
            ("goaicore.dead-letter.partition", b"abc"),
            ("goaicore.dead-letter.message", b"nul \x00 here"),
        ],
    )

    first = project(projection)  # sets the bad reply aside
    later = [project(projection), project(projection)]  # read its dead letter back, and again

    assert first.dead_lettered == 1
    assert [p.dead_lettered for p in later] == [0, 0]
    letters = read_topic(projection, "dead-letters")
    assert len(letters) == 3, "a dead letter was set aside again"
    rows = query(
        projection,
        "SELECT topic_partition, log_offset, reason, message, origin_topic, origin_partition,"
        " origin_offset, consumer, conversation_id, dead_at, key_bytes, value_bytes, truncated,"
        " key, value FROM dead_letters",
    )
    assert sorted((r[0], r[1]) for r in rows) == sorted((r.partition, r.offset) for r in letters)
    dead_at = {(r.partition, r.offset): _record_time(r.timestamp) for r in letters}
    assert all(r[9] == dead_at[(r[0], r[1])] for r in rows)
    by_consumer = {r[7]: r[2:9] + tuple(r[10:13]) + (bytes(r[13]), bytes(r[14])) for r in rows}
    assert by_consumer == {
        "goaicore-projector": (
            "bad-magic",
            by_consumer["goaicore-projector"][1],
            projection.topic("replies"),
            bad.partition,
            bad.offset,
            "goaicore-projector",
            "p1",
            2,
            8,
            "",
            b"p1",
            b"not avro",
        ),
        "goaicore-store": (
            "bad-magic",
            "not one of ours",
            projection.topic("requests"),
            1,
            5,
            "goaicore-store",
            None,
            2,
            1,
            "",
            b"\xff\xfe",
            b"x",
        ),
        "": ("unknown", "nul \ufffd here", "", None, None, "", "p1", 2, 3, "", b"p1", b"odd"),
    }
    assert [r[9] for r in rows if r[7] == ""] == [T]
    assert query(projection, "SELECT event_count FROM conversations") == [(7,)]


def test_replies_become_rows_in_log_order(projection: Settings) -> None:
    replies = [
        ChatReply(
            request_id="r1",
            conversation_id="p1",
            status=ReplyStatus.OK,
            text="Royal Hall \x00 is near",
            usage=Usage(prompt_tokens=120, completion_tokens=12, total_tokens=132, llm_calls=2),
            latency_ms=850,
        ),
        ChatReply(
            request_id="r2",
            conversation_id="p1",
            status=ReplyStatus.TIMEOUT,
            error="the provider did not answer",
            latency_ms=30_000,
        ),
        ChatReply(request_id="r3", conversation_id="p2", status=ReplyStatus.REJECTED, error="no"),
    ]
    positions = publish_replies(projection, replies, timestamp_ms=T_MS)
    project(projection)
    project(projection)  # a restart writes nothing twice
    with connect(projection) as conn:
        p1 = replies_of(conn, "p1")
        assert replies_of(conn, "nobody") == []
    assert [(r.topic_partition, r.log_offset) for r in p1] == [
        (p.partition, p.offset) for p in positions[:2]
    ]
    assert [
        (
            r.request_id,
            r.conversation_id,
            r.status,
            r.text,
            r.error,
            r.prompt_tokens,
            r.completion_tokens,
            r.llm_calls,
            r.latency_ms,
            r.published_at,
        )
        for r in p1
    ] == [
        ("r1", "p1", "ok", "Royal Hall \ufffd is near", None, 120, 12, 2, 850, T),
        ("r2", "p1", "timeout", None, "the provider did not answer", None, None, None, 30_000, T),
    ]
    assert query(projection, "SELECT request_id, status FROM chat_replies ORDER BY 1") == [
        ("r1", "ok"),
        ("r2", "timeout"),
        ("r3", "rejected"),
    ]


def test_a_bad_reply_is_set_aside_and_its_position_still_advances(projection: Settings) -> None:
    good = ChatReply(request_id="r1", conversation_id="p1", status=ReplyStatus.OK, text="fine")
    produce_at(
        projection,
        "replies",
        [
            (b"p1", b"junk"),
            (b"someone-else", encode_chat_reply(good)),  # key is not the conversation id
            (b"p1", encode_event(new_event("p1", UserMessage(text="an event, not a reply")))),
            (b"p1", None),
        ],
    )
    publish_replies(projection, [good])
    projector = project(projection)
    assert projector.dead_lettered == 4
    assert query(projection, "SELECT request_id, log_offset >= 0 FROM chat_replies") == [
        ("r1", True)
    ]
    read = "SELECT sum(next_offset)::bigint FROM projector_positions WHERE topic = %s"
    assert query(projection, read, projection.topic("replies")) == [(5,)]
    project(projection)  # reads the dead letters back
    letters = query(projection, "SELECT reason, origin_topic, consumer FROM dead_letters")
    assert sorted(r[0] for r in letters) == ["bad-magic", "empty", "key-mismatch", "wrong-schema"]
    assert {r[1:] for r in letters} == {(projection.topic("replies"), "goaicore-projector")}


def test_a_reply_postgresql_refuses_is_set_aside_and_the_batch_goes_on(
    projection: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    import goaicore.projection.rows

    monkeypatch.setattr(goaicore.projection.rows, "clean", lambda text: text)  # let NUL through
    publish_replies(
        projection,
        [
            ChatReply(request_id=f"r{n}", conversation_id="p1", status=ReplyStatus.OK, text=text)
            for n, text in enumerate(["before", "nul \x00 inside", "after"])
        ],
    )
    publish(projection, [new_event("p1", UserMessage(text="an event in the same batch"))])
    projector = project(projection)
    assert projector.dead_lettered == 1
    assert query(projection, "SELECT text FROM chat_replies ORDER BY log_offset") == [
        ("before",),
        ("after",),
    ]
    assert query(projection, "SELECT count(*) FROM conversation_events") == [(1,)]
    [letter] = read_topic(projection, "dead-letters")
    assert dict(letter.headers)["goaicore.dead-letter.reason"] == b"refused-by-database"


def test_clearing_empties_the_new_tables_too(projection: Settings) -> None:
    from goaicore.projection.clear import clear_projection

    publish(projection, game_session("p1"))
    produce_at(projection, "replies", [(b"p1", b"not avro")])
    publish_replies(
        projection, [ChatReply(request_id="r1", conversation_id="p1", status=ReplyStatus.OK)]
    )
    project(projection)
    project(projection)
    with connect(projection) as conn:
        cleared = clear_projection(conn, projection.db_schema, projection.topic_prefix)
    assert cleared.rows == {
        "conversation_events": 7,
        "conversation_snapshots": 0,
        "conversations": 1,
        "chat_replies": 1,
        "dead_letters": 1,
    }
    assert query(projection, "SELECT count(*) FROM chat_replies") == [(0,)]
    assert query(projection, "SELECT count(*) FROM dead_letters") == [(0,)]
    project(projection)  # the log again from its start: the bad reply is set aside again
    project(projection)
    assert query(projection, "SELECT count(*) FROM dead_letters") == [(2,)]
    assert len(read_topic(projection, "dead-letters")) == 2
