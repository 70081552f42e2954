"""Apache Kafka's log cleaner at work on goaicore's topics.

- ``snapshots`` is compacted: with small segments, many updates of a few
  conversations leave far fewer records than were written, and a fresh worker
  (new data folder, same application id) recovers its tables from what is left.
- ``requests`` and ``replies`` expire: with a short retention their log start
  moves to their end, and the worker still answers a retried request from its
  replies table.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from goaicore.clients import EventPublisher
from goaicore.config import Settings
from goaicore.kafka import ensure_topics
from goaicore.kafka.apache import LocalKafka
from goaicore.records import GameEvent, ReplyStatus, new_chat_request
from goaicore.testing import OpenAIServer
from tests.chat_agent.helpers import Replies, ScriptedLLM
from tests.deploy.processes import goaicore
from tests.kafka.helpers import (
    alter_topic,
    chat_worker,
    kafka_settings,
    partition_logs,
    snapshots,
    wait_event_counts,
    wait_until,
)

pytestmark = [pytest.mark.apache_kafka, pytest.mark.timeout(1200)]

HOT, ROUNDS = [f"hot-{n}" for n in range(6)], 300
TALK = [f"talk-{n}" for n in range(3)]


@pytest.fixture(scope="module")
def kafka(retention_kafka: LocalKafka) -> LocalKafka:
    return retention_kafka


@pytest.fixture(scope="module")
def llm() -> Iterator[OpenAIServer]:
    with OpenAIServer(responder=ScriptedLLM()) as server:
        yield server


def _asked(llm: OpenAIServer, text: str) -> int:
    return sum(1 for body in llm.bodies if body["messages"][-1].get("content") == text)


def _written_and_readable(settings: Settings, topic: str) -> tuple[int, int]:
    logs = partition_logs(settings, topic).values()
    return sum(p.end for p in logs), sum(p.readable for p in logs)


def test_snapshots_are_compacted_and_a_fresh_worker_recovers_from_them(
    kafka: LocalKafka, postgres_url: str, llm: OpenAIServer, tmp_path: Path
) -> None:
    settings = kafka_settings(kafka, postgres_url, tmp_path / "first")
    ensure_topics(settings)
    changelog = settings.topic("snapshots")
    alter_topic(
        settings,
        changelog,
        {"segment.bytes": "32768", "segment.ms": "500", "min.cleanable.dirty.ratio": "0.01"},
    )
    with Replies(settings) as replies:
        first = chat_worker(settings, llm, "first")
        try:
            # Every round is folded on its own: one snapshot write per conversation and round.
            with EventPublisher(settings) as publisher:
                for n in range(ROUNDS):
                    publisher.publish_many((c, GameEvent(kind="tick", text=f"r{n}")) for c in HOT)
                    time.sleep(0.06)  # longer than the fold's batching window
            asked = [new_chat_request(c, f"{c} question {q}") for q in range(3) for c in TALK]
            for request in asked:
                replies.send(request)
            for request in asked:
                assert replies.wait(request.request_id, timeout=300).status == ReplyStatus.OK
            expected = {**dict.fromkeys(HOT, ROUNDS), **dict.fromkeys(TALK, 6)}
            before = wait_event_counts(settings, expected, timeout=600, workers=(first,))

            # Kafka's cleaner removes the superseded snapshots of the closed segments.
            written, readable = _written_and_readable(settings, changelog)
            assert written >= ROUNDS, (written, readable)
            wait_until(
                lambda: _written_and_readable(settings, changelog)[1] * 4 < written,
                timeout=300,
                what=f"the snapshots topic compacted ({written} written)",
                poll=2,
            )
            assert first.stop() == 0
        finally:
            first.stop()
        compacted = partition_logs(settings, changelog)
        assert sum(p.readable for p in compacted.values()) * 4 < written, compacted
        assert sum(p.end for p in compacted.values()) == written
        assert snapshots(settings) == before  # the latest of each key survives compaction

        # A fresh worker, nothing on disk, same application id: the tables come back
        # from the compacted changelogs.
        fresh = chat_worker(settings.with_overrides(data_dir=tmp_path / "fresh"), llm, "fresh")
        try:
            again = replies.send(asked[0])  # answered before: the stored reply, no new turn
            assert replies.wait(again, count=2, timeout=300) == replies.seen[again][1]
            later = new_chat_request(TALK[0], "and now?")
            replies.send(later)
            assert replies.wait(later.request_id, timeout=300).status == ReplyStatus.OK
            with EventPublisher(settings) as publisher:
                publisher.publish_many((c, GameEvent(kind="tick", text="after")) for c in HOT)
            expected = {**dict.fromkeys(HOT, ROUNDS + 1), **dict.fromkeys(TALK[1:], 6)}
            after = wait_event_counts(
                settings, {**expected, TALK[0]: 8}, timeout=600, workers=(fresh,)
            )
        finally:
            fresh.stop()
    assert {c: s.event_count for c, s in after.items()} == {**expected, TALK[0]: 8}
    assert all(after[c].messages[:-1] == before[c].messages for c in HOT)
    assert _asked(llm, asked[0].text) == 1
    [prompt] = [b for b in llm.bodies if b["messages"][-1].get("content") == "and now?"]
    history = [m.get("content") for m in prompt["messages"]]
    assert [f"{TALK[0]} question {q}" in history for q in range(3)] == [True] * 3

    verified = goaicore(settings, "verify", timeout=600)
    assert verified.returncode == 0, verified.stdout + verified.stderr
    count = len(HOT) + len(TALK)
    assert f"verified {count} snapshots: {count} equal, 0 different" in verified.stdout


def test_requests_and_replies_expire_by_retention(
    kafka: LocalKafka, postgres_url: str, llm: OpenAIServer, tmp_path: Path
) -> None:
    settings = kafka_settings(kafka, postgres_url, tmp_path / "data")
    ensure_topics(settings)
    requests, answers = settings.topic("requests"), settings.topic("replies")
    with Replies(settings) as replies:
        worker = chat_worker(settings, llm)
        try:
            asked = [new_chat_request(c, f"{c} expiring {q}") for q in range(4) for c in TALK]
            for request in asked:
                replies.send(request)
            for request in asked:
                assert replies.wait(request.request_id, timeout=300).status == ReplyStatus.OK
            ends = {t: partition_logs(settings, t) for t in (requests, answers)}
            assert {t: sum(p.readable for p in logs.values()) for t, logs in ends.items()} == {
                requests: len(asked),
                answers: len(asked),
            }

            for topic in (requests, answers):
                alter_topic(settings, topic, {"retention.ms": "1000", "segment.ms": "500"})

            def expired() -> bool:
                now = {t: partition_logs(settings, t) for t in (requests, answers)}
                return all(
                    now[t][p].start == logs[p].end and now[t][p].readable == 0
                    for t, logs in ends.items()
                    for p in logs
                )

            wait_until(expired, timeout=300, what="requests and replies expired", poll=2)
            assert any(p.end > 0 for logs in ends.values() for p in logs.values())

            # The worker goes on: a retry is answered from its replies table, a new
            # request as usual.
            again = replies.send(asked[0])
            assert replies.wait(again, count=2, timeout=300) == replies.seen[again][1]
            assert _asked(llm, asked[0].text) == 1
            later = new_chat_request(TALK[0], "after the expiry?")
            replies.send(later)
            assert replies.wait(later.request_id, timeout=300).status == ReplyStatus.OK
            assert worker.alive()
        finally:
            worker.stop()
