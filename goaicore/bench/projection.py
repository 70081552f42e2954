"""Projection: events per second into PostgreSQL, and reading a long history back.

Events are published first, then one projector (in this process) is timed from its
first poll until it has caught up with every partition, so startup is not counted (nor
a first projection, which warms up); its baselines are the same records read from
Kafka alone (no decoding, no PostgreSQL), on the same broker in the same run, and the
rows it wrote copied again in one raw COPY into an empty table shaped like theirs,
right after each projection. Each of these three is the median of three runs (each
projection into a schema of its own): one run of a second or two varies by a quarter
on a small machine. The history figures read a 10,000-event conversation from
``conversation_events`` (the query alone, then with every event decoded from its
stored Avro bytes); each is the median of several runs, and depends on PostgreSQL,
not the broker. It runs on each
benchmarked broker, a fresh one each time, with a fresh database on the PostgreSQL
that discovery finds, dropped afterwards.
"""

from __future__ import annotations

import os
import statistics
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path

from goaicore.bench.brokers import PARTITIONS, broker_settings
from goaicore.bench.registry import Measurement, broker_suite
from goaicore.bench.store import plain_read
from goaicore.clients import EventPublisher
from goaicore.kafka.local import LocalBroker
from goaicore.kafka.topics import ensure_topics
from goaicore.projection import connect, conversations, history, search
from goaicore.projection.postgres.discovery import discover_postgres, drop_database, ensure_database
from goaicore.projection.projector import Projector
from goaicore.projection.rows import EVENT_COLUMNS
from goaicore.records import (
    AssistantTurn,
    ConversationEvent,
    EventBody,
    GameEvent,
    ToolCall,
    ToolResult,
    Usage,
    UserMessage,
    new_event,
)
from goaicore.records.json_text import compact
from goaicore.settings import Settings

EVENTS = 20_000
CONVERSATIONS = 200
LONG = 10_000
RUNS = 5
REPEATS = 3  # runs of the projector and its two baselines, whose medians are reported
MEDIAN = f"median of {REPEATS} runs"
NOTE = f"PostgreSQL over loopback, one projector; {MEDIAN}"
READ_ALONE = "the same records read from Kafka alone"
RAW_COPY = "the same rows in one raw COPY into a table like conversation_events"
HISTORY = "history query, 10,000-event conversation"


def _body(n: int) -> EventBody:
    match n % 5:
        case 0:
            return GameEvent(kind="check-in", text=f"Player checked in at venue {n}")
        case 1:
            return UserMessage(text=f"Which theatres are open near the station tonight? ({n})")
        case 2:
            return AssistantTurn(
                tool_calls=(ToolCall(id=f"c{n}", name="venues", arguments='{"near":"station"}'),),
                finish_reason="tool_calls",
                usage=Usage(prompt_tokens=300, completion_tokens=20, total_tokens=320),
                provider="openai",
                model="gpt-bench",
                raw_json='{"role":"assistant","content":null}',
                cost_usd_nanos=4_000,
            )
        case 3:
            return ToolResult(tool_call_id=f"c{n - 1}", name="venues", content="Royal Hall; Odeon")
    return AssistantTurn(
        text="The Royal Hall and the Odeon are both open until eleven.",
        finish_reason="stop",
        usage=Usage(prompt_tokens=340, completion_tokens=30, total_tokens=370),
        provider="openai",
        model="gpt-bench",
        cost_usd_nanos=5_000,
    )


def _events(count: int, conversation: Callable[[int], str]) -> list[ConversationEvent]:
    return [new_event(conversation(n), _body(n), source="bench") for n in range(count)]


def _publish(settings: Settings, events: list[ConversationEvent]) -> None:
    with EventPublisher(settings, source="bench") as publisher:
        publisher.publish_many((e.conversation_id, e) for e in events)


def _projected(settings: Settings) -> tuple[Projector, float]:
    """A started projector that has projected every event, and its events per second."""
    projector = Projector(settings).start()
    try:
        started = time.perf_counter()
        projector.drain(timeout=600)
        return projector, EVENTS / (time.perf_counter() - started)
    except BaseException:
        projector.close()
        raise


def _raw_copy(settings: Settings) -> float:
    """Rows per second of one COPY of the projected event rows into an empty table with
    conversation_events' columns, indexes and constraints: PostgreSQL's own ceiling for
    the rows the projector writes (without its decoding, totals and snapshots)."""
    columns = ", ".join(EVENT_COLUMNS)
    with connect(settings, autocommit=False) as conn:
        body = EVENT_COLUMNS.index("body")
        rows = [  # bodies as the projector's compact JSON text
            (*row[:body], compact(row[body]), *row[body + 1 :])
            for row in conn.execute(f"SELECT {columns} FROM conversation_events")
        ]
        conn.execute("CREATE TABLE bench_copy (LIKE conversation_events INCLUDING ALL)")
        conn.commit()
        started = time.perf_counter()
        with conn.cursor() as cur, cur.copy(f"COPY bench_copy ({columns}) FROM STDIN") as copy:
            for row in rows:  # bodies as JSON text, as the projector sends them
                copy.write_row(row)
        conn.commit()
        elapsed = time.perf_counter() - started
        conn.execute("DROP TABLE bench_copy")
        conn.commit()
    return len(rows) / elapsed


def _median_ms(fn: Callable[[], object]) -> float:
    fn()  # warm the cache: figures are for a server that has seen the table
    times = []
    for _ in range(RUNS):
        started = time.perf_counter()
        fn()
        times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times)


def _measure(settings: Settings) -> list[Measurement]:
    _publish(settings, _events(EVENTS, lambda n: f"conv-{n % CONVERSATIONS}"))
    plain_read(settings, EVENTS)  # once to warm up, as the projector's first poll is not timed
    read_alone = statistics.median(plain_read(settings, EVENTS) for _ in range(REPEATS))
    # Once to warm up, not timed: side by side, the first projection of a process ran
    # a quarter to a half slower than the ones after it.
    _projected(settings.with_overrides(db_schema=f"{settings.db_schema}_warm"))[0].close()
    rates, copies = [], []
    for run in range(REPEATS):  # the last run's projection is the one queried below
        last = run == REPEATS - 1
        schema = (
            settings if last else settings.with_overrides(db_schema=f"{settings.db_schema}_{run}")
        )
        projector, rate = _projected(schema)
        rates.append(rate)
        try:
            # Right after each projection, its rows: a drift of the machine's speed moves
            # both figures of a pair alike (timed in two phases, the ratio moved by a third).
            copies.append(_raw_copy(schema))
        except BaseException:
            projector.close()
            raise
        if not last:
            projector.close()
    projected, raw_copy = statistics.median(rates), statistics.median(copies)
    try:
        _publish(settings, _events(LONG, lambda n: "long"))
        projector.drain(timeout=600)
    finally:
        projector.close()
    params = {"events": EVENTS, "conversations": CONVERSATIONS, "partitions": PARTITIONS}
    rows = [
        Measurement(
            "projection",
            "events projected",
            projected,
            "events/s",
            params,
            NOTE,
            baseline=READ_ALONE,
            also_versus=(RAW_COPY,),
        ),
        Measurement(
            "projection",
            READ_ALONE,
            read_alone,
            "events/s",
            params,
            f"no decoding, no PostgreSQL; {MEDIAN}",
        ),
        Measurement(
            "projection",
            RAW_COPY,
            raw_copy,
            "events/s",
            params,
            f"PostgreSQL only; {MEDIAN}",
        ),
    ]
    with connect(settings) as conn:
        conn.execute("ANALYZE")
        long = {"events": LONG}
        cases: list[tuple[str, Callable[[], object], dict[str, int], str | None]] = [
            (HISTORY, lambda: history(conn, "long"), long, None),
            (
                "history query + decode every event",
                lambda: [e.event() for e in history(conn, "long")],
                long,
                HISTORY,
            ),
            (
                "history query, one type (2,000 rows)",
                lambda: history(conn, "long", types=["UserMessage"]),
                long,
                HISTORY,
            ),
            (
                "conversation list (201 conversations)",
                lambda: conversations(conn),
                {"conversations": CONVERSATIONS + 1},
                None,
            ),
            (
                "full-text search, top 20",
                lambda: search(conn, "theatres station"),
                {"rows": EVENTS + LONG},
                None,
            ),
        ]
        for name, fn, case_params, baseline in cases:
            rows.append(
                Measurement(
                    "projection",
                    name,
                    _median_ms(fn),
                    "ms",
                    case_params,
                    f"median of {RUNS}; PostgreSQL only",
                    baseline=baseline,
                )
            )
    return rows


@broker_suite("projection")
def projection(broker: LocalBroker) -> list[Measurement]:
    with tempfile.TemporaryDirectory() as tmp:
        env_url = os.environ.get("DATABASE_URL")
        found = Settings(env={"DATABASE_URL": env_url} if env_url else {}, data_dir=Path(tmp))
        server = discover_postgres(found)
        database = f"goaicore_bench_{uuid.uuid4().hex[:8]}"
        try:
            settings = broker_settings(
                broker,
                "bench-projection",
                Path(tmp),
                database_url=ensure_database(server.url, database),
                db_schema="bench",
            )
            ensure_topics(settings)
            return _measure(settings)
        finally:
            drop_database(server.url, database)
            server.stop()
