"""The CLI commands over the clients: publish-event, history, tail, say."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest

from goaicore.config import Settings
from goaicore.kafka.connection import make_producer
from goaicore.records.avro import encode_reply_chunk
from tests.cli import goaicore, goaicore_env
from tests.clients.scripted_responder import ScriptedResponder
from tests.records.records_samples import REPLY_CHUNK_SAMPLES


def test_publish_event_then_history_and_tail(topics: Settings) -> None:
    published = goaicore(
        topics,
        "publish-event",
        "player-7",
        "Player checked in at Harrogate Theatre",
        "--kind",
        "check-in",
        "--attr",
        "venue=Harrogate Theatre",
        "--attr",
        "tier=gold",
    )
    assert published.returncode == 0, published.stderr
    assert published.stdout.startswith(f"published to {topics.topic_prefix}.events[")

    history = goaicore(topics, "history", "player-7")
    assert history.returncode == 0, history.stderr
    lines = history.stdout.splitlines()
    assert "player-7 game[check-in]: Player checked in at Harrogate Theatre" in lines[0]
    assert "tier=gold venue=Harrogate Theatre" in lines[0]
    assert lines[-1] == "1 events"

    tail = goaicore(topics, "tail", "--from-beginning", "--max", "1", "--idle-timeout", "5")
    assert tail.returncode == 0, tail.stderr
    assert "game[check-in]: Player checked in at Harrogate Theatre" in tail.stdout

    as_json = goaicore(topics, "history", "player-7", "--json")
    assert as_json.returncode == 0, as_json.stderr
    document = json.loads(as_json.stdout)
    assert (document["conversation_id"], document["skipped"]) == ("player-7", 0)
    [logged] = document["events"]
    assert logged["offset"] >= 0
    assert logged["event"]["body"] == {
        "kind": "check-in",
        "text": "Player checked in at Harrogate Theatre",
        "attributes": {"tier": "gold", "venue": "Harrogate Theatre"},
    }
    assert logged["event"]["source"] == "cli"

    # Published again with its event id (as a publish not acknowledged says to do): the
    # log holds the copy, the fold applies it once.
    again = goaicore(
        topics,
        "publish-event",
        "player-7",
        "Player checked in at Harrogate Theatre",
        "--event-id",
        logged["event"]["event_id"],
    )
    assert again.returncode == 0, again.stderr
    read = json.loads(goaicore(topics, "history", "player-7", "--json").stdout)
    assert [e["event"]["event_id"] for e in read["events"]] == [logged["event"]["event_id"]] * 2

    tailed = goaicore(
        topics, "tail", "--from-beginning", "--max", "1", "--idle-timeout", "5", "--json"
    )
    assert tailed.returncode == 0, tailed.stderr
    [line] = [json.loads(text) for text in tailed.stdout.splitlines()]
    assert line["topic"] == topics.topic("events")
    assert (line["partition"], line["offset"]) == (logged["partition"], logged["offset"])
    assert (line["type"], line["record"]) == ("ConversationEvent", logged["event"])


def test_history_into_a_closed_pipe_ends_quietly(topics: Settings) -> None:
    """``goaicore history CONV | head -1``, the reader gone before the output is written."""
    for n in range(3):
        assert goaicore(topics, "publish-event", "piped", f"event {n}").returncode == 0
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        done = subprocess.run(
            [sys.executable, "-m", "goaicore", "history", "piped"],
            env=goaicore_env(topics),
            stdout=write_end,
            stderr=subprocess.PIPE,
            text=True,
            timeout=60,
        )
    finally:
        os.close(write_end)
    assert (done.returncode, done.stderr) == (0, "")


def test_tail_decodes_the_reply_stream(topics: Settings) -> None:
    chunk = REPLY_CHUNK_SAMPLES["delta"]
    producer = make_producer(topics)
    try:
        producer.send(
            topics.topic("reply-stream"),
            key=chunk.conversation_id.encode(),
            value=encode_reply_chunk(chunk),
        ).get(10)
    finally:
        producer.close()
    args = ("tail", "--topic", "reply-stream", "--from-beginning", "--max", "1")
    tail = goaicore(topics, *args, "--idle-timeout", "5")
    assert tail.returncode == 0, tail.stderr
    assert f"chunk {chunk.request_id} player-42 run {chunk.run_id} #1 delta: " in tail.stdout
    assert chunk.text in tail.stdout
    tailed = goaicore(topics, *args, "--idle-timeout", "5", "--json")
    assert tailed.returncode == 0, tailed.stderr
    [line] = [json.loads(text) for text in tailed.stdout.splitlines()]
    assert (line["topic"], line["type"]) == (topics.topic("reply-stream"), "ReplyChunk")
    assert line["record"]["kind"] == "delta"
    assert (line["record"]["seq"], line["record"]["text"]) == (1, chunk.text)


def test_say_prints_the_reply(topics: Settings) -> None:
    with ScriptedResponder(topics):
        said = goaicore(topics, "say", "player-7", "What's my score?", "--timeout", "30")
    assert said.returncode == 0, said.stderr
    assert said.stdout == "echo: What's my score?\n"


def test_say_without_a_worker_exits_1_with_a_reason(topics: Settings) -> None:
    said = goaicore(topics, "say", "player-7", "hello?", "--timeout", "1")
    assert said.returncode == 1
    assert "no reply to request" in said.stderr


def test_bad_arguments_give_one_line_errors(topics: Settings) -> None:
    empty = goaicore(topics, "publish-event", "", "text")
    assert (empty.returncode, empty.stderr) == (2, "goaicore: conversation_id must not be empty\n")
    bad_attr = goaicore(topics, "publish-event", "c", "text", "--attr", "novalue")
    assert bad_attr.returncode == 2
    assert "expected KEY=VALUE, got 'novalue'" in bad_attr.stderr
    bad_timeout = goaicore(topics, "say", "c", "hi", "--timeout", "-1")
    assert bad_timeout.returncode == 2
    assert "must be more than 0" in bad_timeout.stderr


@pytest.mark.parametrize("args", [["history", "c"], ["publish-event", "c", "x"]])
def test_missing_topics_are_a_clear_error(settings: Settings, args: list[str]) -> None:
    started = time.monotonic()
    result = goaicore(settings, *args)
    assert result.returncode == 3  # topics not created: configuration
    assert result.stderr == (
        f"goaicore: topic {settings.topic_prefix}.events does not exist "
        "(is `goaicore dev` running?)\n"
    )
    assert time.monotonic() - started < 20  # said at once, not after the producer's timeouts
