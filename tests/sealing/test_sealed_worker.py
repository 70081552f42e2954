"""A worker with master keys seals its turns' events on Apache Kafka, and opens them to fold.

One key per conversation, on the keys topic before anything sealed under it; the events
topic holds no turn's text in the clear; the fold, replay and verify read it all back
with the master keys, and a reader without them sees the skeleton, marked erased.
"""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import pytest
from kafka import KafkaConsumer, TopicPartition
from kafka.structs import OffsetAndMetadata

from goaicore.clients import HistoryReader
from goaicore.clients.snapshots import SnapshotReader
from goaicore.config import Settings
from goaicore.kafka import ensure_topics
from goaicore.records import (
    AssistantTurn,
    GameEvent,
    ReplyStatus,
    UserMessage,
    new_chat_request,
)
from goaicore.records.avro.api import decode_event, decode_key
from goaicore.replay.verify import verify_log
from goaicore.sealing.content import MARK
from goaicore.sealing.keys import MasterKeys
from goaicore.store.history_operations import HistoryOperations, OperationRefused
from goaicore.testing import OpenAIServer
from tests.brokers import SessionBroker
from tests.chat_agent.helpers import (
    Replies,
    http,
    snapshot_when,
)
from tests.cli import goaicore
from tests.kafka.helpers import wait_until
from tests.readme import run_blocks
from tests.sealing.helpers import start_worker, topic_records
from tests.store.workers import worker_env
from tests.tracing import new_traceparent, records_when, trace_of

SECRET_TEXT = "the dragon under the mill is called Quetzalfire"


def test_a_sealing_worker_keeps_turns_unreadable_in_the_log_and_folds_them_in_the_clear(
    sealed: Settings, llm: OpenAIServer
) -> None:
    conversation = f"player-{uuid.uuid4().hex[:8]}"
    worker = start_worker(sealed, llm, "first")
    try:
        lore = {"kind": "lore", "text": "Quetzalfire sleeps", "attributes": {"hoard": "gold"}}
        status, posted = http("POST", f"{worker.url}/v1/conversations/{conversation}/events", lore)
        assert status == 201, posted
        with Replies(sealed) as replies:
            ask = new_chat_request(conversation, SECRET_TEXT)
            replies.send(ask)
            assert replies.wait(ask.request_id).text == f"echo: {SECRET_TEXT}"
    finally:
        worker.stop()
    # A second worker recovers the keys table and seals the next turn under the same key.
    worker = start_worker(sealed, llm, "second")
    try:
        with Replies(sealed) as replies:
            again = new_chat_request(conversation, "and its hoard?")
            replies.send(again)
            assert replies.wait(again.request_id).text == "echo: and its hoard?"
        snapshot = snapshot_when(sealed, conversation, lambda s: s.message_count == 5)
    finally:
        worker.stop()

    assert [m.text for m in snapshot.messages] == [
        "Quetzalfire sleeps",
        SECRET_TEXT,
        f"echo: {SECRET_TEXT}",
        "and its hoard?",
        "echo: and its hoard?",
    ]
    [key_record] = topic_records(sealed, "keys", conversation)
    key = decode_key(key_record.value)  # type: ignore[attr-defined]
    assert (key.conversation_id, key.master_key_id) == (conversation, "k1")

    events = topic_records(sealed, "events", conversation)
    assert len(events) == 5
    for record in events:
        value: bytes = record.value  # type: ignore[attr-defined]
        assert b"Quetzalfire" not in value
        assert b"hoard" not in value
        stored = decode_event(value)
        assert stored.sealed is not None
        assert stored.sealed.key_id == key.key_id
        assert type(stored.body) in (GameEvent, UserMessage, AssistantTurn)  # its skeleton

    with HistoryReader(sealed) as history:
        texts = [e.body.text for e in history.events(conversation)]  # type: ignore[union-attr]
    assert texts == [m.text for m in snapshot.messages]
    without_keys = sealed.with_overrides(master_keys=None)
    with HistoryReader(without_keys) as history:
        assert [e.body.text for e in history.events(conversation)] == [MARK] * 5  # type: ignore[union-attr]

    with SnapshotReader(sealed) as snapshots:
        stored_snapshots = {conversation: snapshots.get(conversation)}
    with HistoryReader(sealed) as history:
        report = verify_log(history, stored_snapshots, progress=False)  # type: ignore[arg-type]
    assert (report.checked, report.differences, history.skipped) == (1, [], 0)

    # A history operation that copies content refuses to copy marks it merely cannot open.
    with (
        HistoryOperations(without_keys) as blind,
        pytest.raises(OperationRefused, match="cannot be opened here"),
    ):
        blind.rewind(conversation, events[0].offset)  # type: ignore[attr-defined]

    material = sealed.master_keys.split(":", 1)[1]  # type: ignore[union-attr]
    for name in ("first", "second"):
        logged = (sealed.data_dir / f"{name}.log").read_text()
        assert material not in logged


def test_erasure_destroys_the_key_and_leaves_the_skeleton_and_other_conversations(
    sealed: Settings, llm: OpenAIServer
) -> None:
    erased_one, kept_one = (f"{name}-{uuid.uuid4().hex[:8]}" for name in ("gone", "kept"))
    worker = start_worker(sealed, llm, "erasing")
    try:
        with Replies(sealed) as replies:
            for conversation in (erased_one, kept_one):
                ask = new_chat_request(conversation, SECRET_TEXT)
                replies.send(ask)
                assert replies.wait(ask.request_id).status == ReplyStatus.OK
        snapshot_when(sealed, erased_one, lambda s: s.message_count == 2)
        fork = f"fork-of-{erased_one}"
        with HistoryOperations(sealed) as ops:
            ops.fork(erased_one, fork)
        snapshot_when(sealed, fork, lambda s: s.forked_from is not None)
        status, answer = http(
            "POST", f"{worker.url}/v1/conversations/{erased_one}/erase", {"reason": "GDPR"}
        )
        assert (status, answer["key_destroyed"]) == (200, True)
        assert answer["forks"] == [fork]  # each keeps its own copy: named, to erase too
        erased = snapshot_when(sealed, erased_one, lambda s: s.erased_before is not None)
        assert erased.erased_before is not None
        assert erased.erased_before.offset == answer["offset"]
        assert (erased.messages, erased.event_count, erased.message_count) == ((), 3, 2)
        assert erased.completion_tokens > 0  # the audit skeleton stays

        # The conversation goes on under a new key, which a second reading of the
        # erasure (a restarted worker) must not destroy.
        with Replies(sealed) as replies:
            ask = new_chat_request(erased_one, "a fresh start")
            replies.send(ask)
            assert replies.wait(ask.request_id).text == "echo: a fresh start"
        after = snapshot_when(sealed, erased_one, lambda s: s.message_count == 4)
    finally:
        worker.stop()
    assert [m.text for m in after.messages] == ["a fresh start", "echo: a fresh start"]

    [first_key, tombstone, second_key] = topic_records(sealed, "keys", erased_one)
    assert tombstone.value is None  # type: ignore[attr-defined]
    renewed = decode_key(second_key.value)  # type: ignore[attr-defined]
    assert renewed.after_erasure_offset == answer["offset"]
    assert renewed.key_id != decode_key(first_key.value).key_id  # type: ignore[attr-defined]

    with HistoryReader(sealed) as history:
        logged = list(history.logged_events(erased_one))
        kept = [e.body.text for e in history.events(kept_one)]  # type: ignore[union-attr]
    assert [type(e.event.body).__name__ for e in logged] == [
        "UserMessage", "AssistantTurn", "ConversationErased", "UserMessage", "AssistantTurn",
    ]  # fmt: skip
    texts = [getattr(e.event.body, "text", None) for e in logged]
    assert texts == [MARK, MARK, None, "a fresh start", "echo: a fresh start"]
    assert [e.event.sealed is not None for e in logged] == [True, True, False, False, False]
    assert kept == [SECRET_TEXT, f"echo: {SECRET_TEXT}"]

    with SnapshotReader(sealed) as snapshots:
        stored = {c: snapshots.get(c) for c in (erased_one, kept_one)}
    with HistoryReader(sealed) as history:
        report = verify_log(history, stored, progress=False)  # type: ignore[arg-type]
    assert (report.checked, report.differences) == (2, [])

    # A worker that reads the erasure again (here: the whole log, from offset 0, as a
    # rebuild would; or a crash before its offsets were committed) keeps the key made
    # after it: the key names the erasure it followed.
    _fold_again_from_the_start(sealed)
    restarted = start_worker(sealed, llm, "restarted")
    try:
        with Replies(sealed) as replies:
            ask = new_chat_request(erased_one, "still there?")
            replies.send(ask)
            assert replies.wait(ask.request_id).text == "echo: still there?"
        # From the command line, which needs no master keys to erase.
        done = goaicore(sealed, "erase", kept_one, "--reason", "asked", "--json")
        assert done.returncode == 0, done.stderr
        assert json.loads(done.stdout)["key_destroyed"] is True
        keys = goaicore(
            sealed, "tail", "--topic", "keys", "--from-beginning", "--idle-timeout", "3"
        )
        assert keys.returncode == 0, keys.stderr
        assert f"tombstone {kept_one}\n" in keys.stdout
        assert f"key {erased_one}: data key {renewed.key_id} wrapped under" in keys.stdout
        missing = goaicore(sealed, "erase", "never-seen")
        assert (missing.returncode, missing.stdout) == (2, "")
        assert "no events for conversation 'never-seen'" in missing.stderr
    finally:
        restarted.stop()
    assert len(topic_records(sealed, "keys", erased_one)) == 3
    restarted_log = (sealed.data_dir / "restarted.log").read_text()
    assert f"erased {erased_one!r}: its data key is destroyed" not in restarted_log
    assert f"erased {kept_one!r}: its data key is destroyed" in restarted_log


def _fold_again_from_the_start(settings: Settings) -> None:
    """Commit offset 0 on every events partition for the store's consumer group."""
    consumer = KafkaConsumer(
        bootstrap_servers=settings.require_bootstrap(),
        group_id=f"{settings.topic_prefix}.store",
        enable_auto_commit=False,
    )
    try:
        partitions = [
            TopicPartition(settings.topic("events"), p) for p in range(settings.partitions)
        ]
        consumer.assign(partitions)
        consumer.commit({p: OffsetAndMetadata(0, "", -1) for p in partitions})
    finally:
        consumer.close()


def test_the_readme_example_runs_as_written(
    sealed: Settings,
    llm: OpenAIServer,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    worker = start_worker(sealed, llm, "readme")
    try:
        section = "Erasure: content unreadable, the audit trail kept"
        assert run_blocks(section, worker_env(sealed), monkeypatch) == 1
    finally:
        worker.stop()
    assert capsys.readouterr().out.splitlines() == ["key destroyed: True"]
    erased = snapshot_when(sealed, "player-7", lambda s: s.erased_before is not None)
    assert (erased.messages, erased.message_count) == ((), 2)


def test_a_rotated_master_key_wraps_every_key_again_and_the_old_one_can_go(
    kafka_broker: SessionBroker, llm: OpenAIServer, tmp_path: Path
) -> None:
    old, new = MasterKeys.generate("old"), MasterKeys.generate("new")
    settings = kafka_broker.settings(tmp_path, "r", master_keys=old.to_text())
    ensure_topics(settings)
    conversation = "rotated"
    both = MasterKeys((*new, *old))  # the new key first: it wraps; both open

    def latest_master_key() -> str:
        latest: Any = topic_records(settings, "keys", conversation)[-1]
        return decode_key(latest.value).master_key_id

    def turn(keys: MasterKeys, name: str, text: str) -> None:
        worker = start_worker(settings.with_overrides(master_keys=keys.to_text()), llm, name)
        try:
            with Replies(settings) as replies:
                ask = new_chat_request(conversation, text)
                replies.send(ask)
                assert replies.wait(ask.request_id).text == f"echo: {text}"
            if keys is both:
                wait_until(
                    lambda: latest_master_key() == "new",
                    timeout=60,
                    what="the key wrapped again under the new master key",
                )
        finally:
            worker.stop()

    turn(old, "before", "sealed under the old master key")
    turn(both, "rotating", "while both are held")
    turn(new, "after", "the old one gone")

    only_new = settings.with_overrides(master_keys=new.to_text())
    with HistoryReader(only_new) as history:
        texts = [e.body.text for e in history.events(conversation)]  # type: ignore[union-attr]
    assert texts[0] == "sealed under the old master key"
    assert texts[-1] == "echo: the old one gone"
    written = [decode_key(r.value) for r in topic_records(settings, "keys", conversation)]  # type: ignore[attr-defined]
    assert [k.master_key_id for k in written] == ["old", "new"]
    assert len({k.key_id for k in written}) == 1  # the same data key, wrapped again


def test_a_sealing_worker_keeps_each_http_requests_trace_through_the_intake(
    sealed: Settings, llm: OpenAIServer
) -> None:
    """Sealed, an event is sealed by the owner and history operations reach ``events``
    through the intake: every record still carries its HTTP request's trace."""
    conversation = f"traced-{uuid.uuid4().hex[:8]}"
    worker = start_worker(sealed, llm, "tracing")
    url = f"{worker.url}/v1/conversations/{conversation}"
    try:
        traces = []
        for method, path, body in (
            ("POST", "events", {"text": "Quetzalfire stirs"}),
            ("POST", "messages", {"text": "hello sealed", "timeout": 30}),
            ("PATCH", "metadata", {"title": "Sealed and traced"}),
            ("POST", "erase", {"reason": "GDPR"}),
        ):
            traceparent, trace_id = new_traceparent()
            headers = {"traceparent": traceparent}
            status, answer = http(method, f"{url}/{path}", body, extra_headers=headers)
            assert status in (200, 201), answer
            traces.append(trace_id)
        # The event, the ask's user message and assistant turn, the metadata, the erasure.
        expected = [traces[0], traces[1], traces[1], traces[2], traces[3]]
        events = records_when(sealed, sealed.topic("events"), conversation, 5)
        assert [trace_of(r) for r in events] == expected
    finally:
        worker.stop()
