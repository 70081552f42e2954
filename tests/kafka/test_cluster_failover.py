"""A three-node cluster loses a partition leader (kill -9) while events and chats flow.

Replication factor 3 and ``min.insync.replicas`` 2: with one broker gone every
partition keeps a leader and acks=all writes go on. One store worker (chat on a
scripted OpenAI-compatible server) and the projector keep running through the
failure; nothing published is lost or doubled, every request gets exactly one
reply, and ``goaicore verify`` and ``verify --db`` agree with the log.
"""

from __future__ import annotations

import time
from collections import Counter
from pathlib import Path

import pytest

from goaicore.clients import EventPublisher
from goaicore.kafka import ensure_topics
from goaicore.kafka.apache import LocalKafka
from goaicore.kafka.probe import kafka_known_brokers
from goaicore.records import ReplyStatus
from goaicore.testing import OpenAIServer
from tests.chat_agent.helpers import Replies, ScriptedLLM
from tests.kafka.helpers import (
    ChatLoad,
    EventStream,
    assert_verified,
    chat_worker,
    committed_events,
    describe,
    goaicore_topics,
    kafka_settings,
    log_event_ids,
    partition_logs,
    projected_event_counts,
    projector,
    wait_event_counts,
    wait_projected,
    wait_until,
    worker_log_digest,
)

pytestmark = [pytest.mark.apache_kafka, pytest.mark.timeout(1800)]

EVENTS, STREAM_CONVERSATIONS = 10_000, 100
REQUESTS, CHAT_CONVERSATIONS = 200, 20


def test_kill9_of_a_leading_broker_loses_and_doubles_nothing(
    cluster: LocalKafka, postgres_url: str, tmp_path: Path
) -> None:
    settings = kafka_settings(cluster, postgres_url, tmp_path / "data", partitions=6, replication=3)
    ensure_topics(settings)
    topics = goaicore_topics(settings)
    assert {len(p["replica_nodes"]) for p in describe(settings, topics).values()} == {3}
    for node in cluster.nodes:  # the launcher waits until every node knows every node
        known = kafka_known_brokers("127.0.0.1", node.ports.client, 5)
        assert not isinstance(known, str), known
        assert known[0] == {1, 2, 3}
        assert known[1] in known[0]

    with OpenAIServer(responder=ScriptedLLM(delay=0.02)) as llm, Replies(settings) as replies:
        worker = chat_worker(settings, llm)
        projection = projector(settings)
        try:
            with EventPublisher(settings) as publisher:
                publisher.user_message("warm-up", "ready?")
            wait_event_counts(settings, {"warm-up": 1}, timeout=300, workers=(worker,))
            stream = EventStream(settings, EVENTS, STREAM_CONVERSATIONS, pause=0.4).start()
            chats = ChatLoad(settings, replies, REQUESTS, CHAT_CONVERSATIONS, pause=0.25).start()

            # Kill the broker that leads the most of goaicore's partitions, once the
            # worker has folded and answered part of the traffic and more is coming.
            wait_until(
                lambda: committed_events(settings) >= 2500 and chats.answered() >= 30,
                timeout=300,
                what="folding and answering before the kill",
                state=lambda: (
                    f"committed events {committed_events(settings)}, stream sent {stream.sent}"
                    f" {stream.errors}, replies {chats.answered()} of {len(chats.requests)} sent"
                    f" {chats.errors}\n"
                    f"--- worker's tasks ---\n{worker.task_stacks()}\n"
                    f"--- worker ---\n{worker_log_digest(worker.log())}"
                ),
            )
            assert not stream.done.is_set(), "the stream ended before the kill: slow it down"
            assert not chats.done.is_set(), "the requests ended before the kill: slow them down"
            leaders = Counter(p["leader_id"] for p in describe(settings, topics).values())
            victim = leaders.most_common(1)[0][0]
            index = next(i for i, n in enumerate(cluster.nodes) if n.node_id == victim)
            cluster.kill_node(index)

            stream.wait(timeout=600)
            chats.wait_sent(timeout=600)
            wait_until(
                lambda: chats.answered() == REQUESTS,
                timeout=600,
                what=f"replies ({chats.answered()} of {REQUESTS})",
            )
            after_kill = describe(settings, topics)
            assert all(p["leader_id"] not in (victim, -1) for p in after_kill.values())

            ok_per_conversation = Counter(
                chats.requests[rid]
                for rid in chats.requests
                if replies.seen[rid][0].status == ReplyStatus.OK
            )
            expected = {
                **stream.expected_counts(),
                **{c: 2 * n for c, n in ok_per_conversation.items()},  # question + answer
                "warm-up": 1,
            }
            stored = wait_event_counts(settings, expected, timeout=600, workers=(worker,))
            logged = log_event_ids(settings)
            events_in_log = sum(logged.values())
            wait_projected(settings, (events_in_log, len(expected)), projection, timeout=600)
            time.sleep(3)  # a late duplicate reply would show up meanwhile
            assert worker.alive(), worker.log()[-4000:]
        finally:
            worker.stop()
            projection.stop()

        # Every request: one reply, an answer, one LLM call.
        statuses = Counter(replies.seen[rid][0].status for rid in chats.requests)
        assert statuses == Counter({ReplyStatus.OK: REQUESTS}), statuses
        assert Counter(len(replies.seen[rid]) for rid in chats.requests) == {1: REQUESTS}
        asked = Counter(b["messages"][-1].get("content") for b in llm.bodies)
        assert all(asked[text] == 1 for text in chats.texts.values())

    # The log holds every published event once, and nothing else twice.
    assert all(logged[event_id] == 1 for event_id in stream.event_ids)
    assert logged.most_common(1)[0][1] == 1
    assert events_in_log == EVENTS + 1 + 2 * REQUESTS
    assert sum(p.end - p.start for p in partition_logs(settings, topics[0]).values()) == (
        events_in_log
    )
    # Each event folded once, in the snapshots topic and in PostgreSQL.
    assert {c: s.event_count for c, s in stored.items()} == expected
    assert projected_event_counts(settings) == expected
    assert_verified(settings, len(expected))

    # The killed broker comes back on its data and catches up with every partition.
    cluster.start_node(index)
    wait_until(
        lambda: all(
            sorted(p["isr_nodes"]) == sorted(p["replica_nodes"])
            for p in describe(settings, topics).values()
        ),
        timeout=300,
        what="the restarted broker back in every ISR",
    )
