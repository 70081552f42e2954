"""GOAICORE_LOG_FORMAT=json: the worker, the projector and the CLI log one JSON object per
line, with the ids and the log position of what they were handling as fields."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from kafka import KafkaProducer

from goaicore.config import Settings
from goaicore.devstack.worker_process import settings_env
from goaicore.records import ReplyStatus, new_chat_request
from goaicore.testing import OpenAIServer
from tests.chat_agent.helpers import ChatWorker, Replies, llm_env, wait_http
from tests.cli import run_goaicore


def _json_lines(path: Path) -> list[dict[str, Any]]:
    lines = [line for line in path.read_text().splitlines() if line.strip()]
    assert lines
    return [json.loads(line) for line in lines]  # every line is one JSON object


def test_the_worker_logs_json_lines_with_fields(
    topics: Settings, llm: OpenAIServer, replies: Replies
) -> None:
    worker = ChatWorker(topics, "json-logs", GOAICORE_LOG_FORMAT="json", **llm_env(llm))
    worker.start()
    try:
        wait_http(worker.url)
        request = new_chat_request("json-logs-1", "log me")
        replies.send(request)
        assert replies.wait(request.request_id, timeout=90).status == ReplyStatus.OK
        replies.send(request)  # again: answered from the stored reply, and logged so
        replies.wait(request.request_id, count=2, timeout=60)
        producer = KafkaProducer(bootstrap_servers=topics.require_bootstrap())
        bad = producer.send(topics.topic("events"), key=b"json-logs-1", value=b"\x00").get(10)
        producer.close()
        deadline = time.monotonic() + 60
        while "dead letter" not in worker.log_path.read_text():
            assert time.monotonic() < deadline, "no dead letter logged"
            time.sleep(0.3)
    finally:
        worker.stop()
    lines = _json_lines(worker.log_path)
    assert {"time", "level", "logger", "message"} <= set(lines[0])
    assert "goaicore worker: Settings(" in lines[0]["message"]
    [again] = [line for line in lines if "answered before" in line["message"]]
    assert again["request_id"] == request.request_id
    assert again["conversation_id"] == "json-logs-1"
    assert again["topic"] == topics.topic("requests")
    assert isinstance(again["offset"], int)
    [dead] = [line for line in lines if line["message"].startswith("dead letter")]
    assert (dead["topic"], dead["partition"], dead["offset"]) == (
        topics.topic("events"),
        bad.partition,
        bad.offset,
    )
    assert dead["level"] == "WARNING"


def test_the_cli_stops_with_a_json_line(topics: Settings) -> None:
    env = {**settings_env(topics), "GOAICORE_LOG_FORMAT": "json"}
    done = run_goaicore("history", "", env=env, timeout=60)
    assert done.returncode == 2
    [line] = [json.loads(text) for text in done.stderr.splitlines()]
    assert line["level"] == "ERROR"
    assert line["message"] == "conversation_id must not be empty"
    assert (line["error"], line["exit_code"]) == ("InvalidInputError", 2)
