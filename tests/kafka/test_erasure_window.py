"""After an erasure and its window, no file of any topic holds the conversation's content.

Apache Kafka, one broker with the retention check every second; the topics created
with a 3-second ``GOAICORE_ERASURE_WINDOW``. A conversation's text reaches the events
topic (sealed), the intake, requests and replies topics, the snapshots topic and the
replies table's changelog (in the clear, compressed). After ``erase``, once the window has
passed and later records land in every partition, the broker's own log files (active,
cleaned and pending deletion alike, decompressed) hold neither its text nor its
wrapped data key, and no table of the PostgreSQL projection holds its text; another
conversation reads as it did, and verify passes.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from goaicore.clients import EventPublisher, HistoryReader
from goaicore.clients.snapshots import SnapshotReader
from goaicore.config import Settings
from goaicore.devstack.demo import wait_ready
from goaicore.kafka import ensure_topics
from goaicore.kafka.apache import LocalKafka
from goaicore.kafka.partitioner import partition_for
from goaicore.records import ReplyStatus, new_chat_request
from goaicore.replay.verify import verify_log
from goaicore.sealing.keyring import TopicKeys
from goaicore.sealing.keys import MasterKeys
from goaicore.testing import OpenAIServer
from tests.chat_agent.helpers import Replies, ScriptedLLM, http, snapshot_when
from tests.kafka.helpers import chat_worker, kafka_settings, wait_until
from tests.kafka_segments import partition_files, stored_records
from tests.projector.helpers import project, query

pytestmark = [pytest.mark.apache_kafka, pytest.mark.timeout(600)]

SECRET = "Quetzalfire"
WINDOW = 3.0


@pytest.fixture(scope="module")
def kafka(retention_kafka: LocalKafka) -> LocalKafka:
    return retention_kafka


def _stored(kafka: LocalKafka, settings: Settings, part: str = "") -> list[bytes]:
    """The records of every file of the prefix's topics (those whose name holds ``part``)."""
    return [
        records
        for path in partition_files(kafka, settings.topic_prefix)
        if part in path.parent.name
        for records in stored_records(path)
    ]


def _holds(stored: list[bytes], needle: bytes) -> bool:
    return any(needle in records for records in stored)


def test_after_an_erasure_and_its_window_no_topic_file_holds_the_content(
    kafka: LocalKafka, postgres_url: str, tmp_path: Path
) -> None:
    settings = kafka_settings(kafka, postgres_url, tmp_path).with_overrides(
        master_keys=MasterKeys.generate().to_text(), erasure_window=WINDOW
    )
    ensure_topics(settings)
    with OpenAIServer(responder=ScriptedLLM()) as llm, Replies(settings) as replies:
        worker = chat_worker(settings, llm)
        try:
            wait_ready(worker.url)
            lore = {"kind": "lore", "text": f"{SECRET} sleeps under the mill"}
            assert http("POST", f"{worker.url}/v1/conversations/gone/events", lore)[0] == 201
            with EventPublisher(settings) as publisher:  # through intake, in the clear there
                publisher.game_event("gone", f"{SECRET} stirs", "lore")
            for conversation, text in (("gone", f"Tell me about {SECRET}"), ("kept", "Ironbark")):
                ask = new_chat_request(conversation, text)
                replies.send(ask)
                assert replies.wait(ask.request_id).status == ReplyStatus.OK
            snapshot_when(settings, "gone", lambda s: s.message_count == 4)
            with TopicKeys(settings) as keys:
                wrapped = keys.find("gone")
            assert wrapped is not None
            before = _stored(kafka, settings)
            # The scan sees content where it is: compressed snapshots, plain requests.
            assert _holds(_stored(kafka, settings, ".snapshots-"), SECRET.encode())
            assert _holds(_stored(kafka, settings, ".requests-"), SECRET.encode())
            assert _holds(_stored(kafka, settings, ".intake-"), SECRET.encode())
            assert _holds(before, wrapped.wrapped)
            assert not _holds(_stored(kafka, settings, ".events-"), SECRET.encode())
            project(settings)
            assert _tables_holding(settings, SECRET) >= {
                "conversation_events",
                "chat_replies",
                "conversation_snapshots",
            }

            status, erased = http("POST", f"{worker.url}/v1/conversations/gone/erase", {})
            assert (status, erased["key_destroyed"], erased["already_erased"]) == (200, True, False)
            status, again = http("POST", f"{worker.url}/v1/conversations/gone/erase", {})
            assert (status, again["key_destroyed"], again["already_erased"]) == (200, False, True)
            time.sleep(WINDOW + 1)
            # Records after the window in every partition: Kafka rolls the segments the
            # erased content sits in on such an append, and then compacts or deletes them.
            with EventPublisher(settings) as publisher:
                for partition in range(settings.partitions):
                    later = _conversation_in(partition, settings)
                    publisher.game_event(later, "later")
                    ask = new_chat_request(later, "later")
                    replies.send(ask)
                    assert replies.wait(ask.request_id).status == ReplyStatus.OK

            def content_gone() -> bool:
                stored = _stored(kafka, settings)
                return not _holds(stored, SECRET.encode()) and not _holds(stored, wrapped.wrapped)

            wait_until(content_gone, timeout=120, what="the erased content off the disk", poll=1)
        finally:
            worker.stop()
    project(settings)
    assert _tables_holding(settings, SECRET) == set()
    assert _tables_holding(settings, "Ironbark") >= {
        "conversation_events",
        "chat_replies",
        "conversation_snapshots",
    }

    with HistoryReader(settings) as history:
        assert [e.body.text for e in history.events("kept")] == ["Ironbark", "echo: Ironbark"]  # type: ignore[union-attr]
    with SnapshotReader(settings) as snapshots:
        stored = snapshots.all(progress=False)
    with HistoryReader(settings) as history:
        report = verify_log(history, stored, progress=False)
    assert (report.checked, report.differences) == (len(stored), [])
    assert stored["gone"].erased_before is not None
    assert stored["gone"].message_count == 4


def _tables_holding(settings: Settings, text: str) -> set[str]:
    """The projection's tables with a row that holds ``text`` anywhere."""
    tables = query(
        settings,
        "SELECT table_name FROM information_schema.tables WHERE table_schema = %s",
        settings.db_schema,
    )
    schema = settings.db_schema
    return {
        table
        for (table,) in tables
        if query(
            settings, f'SELECT 1 FROM "{schema}"."{table}" t WHERE t::text LIKE %s', f"%{text}%"
        )
    }


def _conversation_in(partition: int, settings: Settings) -> str:
    return next(
        name
        for name in (f"later-{n}" for n in range(1000))
        if partition_for(name, settings.partitions) == partition
    )
