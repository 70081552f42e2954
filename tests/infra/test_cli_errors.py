"""Operator errors: an unreachable broker or database is one line, never a traceback."""

from __future__ import annotations

import argparse
import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from goaicore import cli
from goaicore.cli import events
from tests.cli import run_goaicore
from tests.listeners import http_listener

KAFKA_COMMANDS = [
    ["history", "p1"],
    ["replay", "p1"],
    ["verify"],
    ["tail", "--max", "1"],
    ["publish-event", "p1", "hello"],
    ["say", "p1", "hi"],
    ["create-topics"],
]
DATABASE_COMMANDS = [
    ["conversations"],
    ["search", "door"],
    ["ledger"],
    ["verify", "--db"],
    ["history", "p1", "--from-db"],
    ["projection", "clear", "--schema", "public", "--prefix", "goaicore"],
]


def _closed_port() -> int:
    with socket.socket() as free:
        free.bind(("127.0.0.1", 0))
        return int(free.getsockname()[1])


@pytest.fixture
def http_port() -> Iterator[int]:
    """Something at the address that answers, but not Kafka."""
    with http_listener() as port:
        yield port


def _run(args: list[str], tmp_path: Path, **env: str) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("KAFKA_", "GOAICORE_"))}
    clean.pop("DATABASE_URL", None)
    return run_goaicore(*args, env={**clean, "GOAICORE_DATA_DIR": str(tmp_path), **env}, timeout=60)


@pytest.mark.parametrize("args", KAFKA_COMMANDS, ids=[" ".join(a) for a in KAFKA_COMMANDS])
def test_no_broker_at_the_address_is_one_line(args: list[str], tmp_path: Path) -> None:
    done = _run(args, tmp_path, KAFKA_BOOTSTRAP_SERVERS=f"127.0.0.1:{_closed_port()}")
    assert done.returncode == 4  # the broker is unreachable
    assert "Traceback" not in done.stderr
    [line] = done.stderr.strip().splitlines()
    assert line.startswith("goaicore: no Kafka broker answers at 127.0.0.1:")
    assert "Connection refused" in line


def test_something_other_than_kafka_at_the_address_is_one_line(
    http_port: int, tmp_path: Path
) -> None:
    done = _run(["history", "p1"], tmp_path, KAFKA_BOOTSTRAP_SERVERS=f"127.0.0.1:{http_port}")
    assert done.returncode == 4
    [line] = done.stderr.strip().splitlines()
    assert "no Kafka broker answers" in line
    assert "not a Kafka answer" in line


@pytest.mark.parametrize("args", DATABASE_COMMANDS, ids=[" ".join(a) for a in DATABASE_COMMANDS])
def test_no_database_at_the_address_is_one_line_without_the_password(
    args: list[str], tmp_path: Path
) -> None:
    url = f"postgresql://auditor:s3cret-pw@127.0.0.1:{_closed_port()}/goaicore"
    done = _run(args, tmp_path, DATABASE_URL=url)
    assert done.returncode == 4  # the database is unreachable
    assert "Traceback" not in done.stderr
    [line] = done.stderr.strip().splitlines()
    assert line.startswith("goaicore: PostgreSQL at 127.0.0.1:")
    assert "/goaicore did not accept the connection" in line
    assert "s3cret-pw" not in done.stderr + done.stdout


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["conversations", "--limit", "-1"], "must be at least 1, got -1"),
        (["search", "x", "--limit", "0"], "must be at least 1, got 0"),
        (["tail", "--max", "lots"], "expected a whole number, got 'lots'"),
        (["tail", "--idle-timeout", "-3"], "must be a finite number of at least 0.1"),
        (["replay", "p1", "--until-offset", "-5"], "must be at least 0, got -5"),
        (["worker", "--web-port", "70000"], "must be from 1 to 65535, got 70000"),
        (["create-topics", "--wait", "nan"], "must be a finite number of at least 0"),
        (["say", "p1", "hi", "--timeout", "1e10"], "at most 604800 seconds, got '1e10'"),
        (["say", "p1", "hi", "--timeout", "inf"], "must be more than 0 and at most 604800"),
        (["say", "p1", "hi", "--timeout", "nan"], "must be more than 0 and at most 604800"),
        (["regenerate", "p1", "--timeout", "1e400"], "at most 604800 seconds, got '1e400'"),
        (["erase", "p1", "--timeout=-inf"], "must be more than 0 and at most 604800"),
        (["erase", "--idle-days", "1e300"], "must be more than 0 and at most 36500 days"),
        (["erase", "--idle-days", "nan"], "must be more than 0 and at most 36500 days"),
        (["tail", "--idle-timeout", "inf"], "at least 0.1 and at most 604800 seconds"),
        (["create-topics", "--timeout", "1e9"], "at least 1 and at most 604800 seconds"),
    ],
)
def test_bad_numbers_are_refused_by_the_parser(
    args: list[str], message: str, tmp_path: Path
) -> None:
    done = _run(args, tmp_path)
    assert done.returncode == 2
    assert message in done.stderr
    assert "Traceback" not in done.stderr


def test_a_closed_stdout_ends_a_command_quietly(monkeypatch: pytest.MonkeyPatch) -> None:
    """``goaicore history CONV | head -1``: the reader is gone before the output is written."""

    def many_lines(args: argparse.Namespace) -> int:
        for offset in range(10_000):
            print(f"{offset:>8} {args.conversation} user: hello")
        return 0

    monkeypatch.setattr(events, "handle_history", many_lines)
    read_end, write_end = os.pipe()
    os.close(read_end)
    closed = open(write_end, "w")  # noqa: SIM115 - closed below, after main rebinds its fd
    monkeypatch.setattr(sys, "stdout", closed)
    try:
        code = cli.main(["history", "p1"])
        print("after", flush=True)  # stdout is the null device now: no second error
    finally:
        closed.close()
    assert code == 0


@pytest.mark.parametrize(
    "args",
    [
        ["history", "\udcff"],
        ["undo", "p\udcff"],
        ["publish-event", "\udcff", "hello"],
        ["say", "p1", "caf\udce9"],
    ],
    ids=["history", "undo", "publish-event id", "say text"],
)
def test_a_byte_that_is_not_utf8_is_one_line(args: list[str], tmp_path: Path) -> None:
    """``goaicore history $'\\xff'``: refused before any broker is asked."""
    done = _run(args, tmp_path, KAFKA_BOOTSTRAP_SERVERS=f"127.0.0.1:{_closed_port()}")
    assert done.returncode == 2, done.stderr
    [line] = done.stderr.strip().splitlines()
    assert "is not valid UTF-8 text: character" in line
    assert "not UTF-8, as a command line passes it" in line


@pytest.mark.parametrize(
    "args",
    [
        ["history", "tab\there"],
        ["undo", "del\x7f"],
        ["publish-event", "bell\x07", "hello"],
        ["say", "line\u2028sep", "hello"],
        ["erase", "esc\x1b[31m"],
    ],
    ids=["history", "undo", "publish-event", "say", "erase"],
)
def test_a_conversation_id_with_a_control_character_is_exit_2(
    args: list[str], tmp_path: Path
) -> None:
    """Refused before any broker is asked, naming the character."""
    done = _run(args, tmp_path, KAFKA_BOOTSTRAP_SERVERS=f"127.0.0.1:{_closed_port()}")
    assert done.returncode == 2, done.stderr
    [line] = done.stderr.strip().splitlines()
    assert "conversation_id holds U+" in line


def test_erase_without_a_conversation_says_what_is_missing(tmp_path: Path) -> None:
    done = _run(["erase"], tmp_path)
    assert done.returncode == 2
    assert done.stderr == (
        "goaicore: erase needs what to erase: a conversation (CONV), or --idle-days DAYS "
        "for every conversation idle that long\n"
    )
    both = _run(["erase", "p1", "--idle-days", "3"], tmp_path)
    assert both.returncode == 2
    assert "not both" in both.stderr


def test_erasing_an_erased_conversation_says_so(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from goaicore.records import TopicPosition
    from goaicore.store import history_operations
    from goaicore.store.history import Erased

    class Operations:
        def __enter__(self) -> Operations:
            return self

        def __exit__(self, *exc: object) -> None:
            pass

        def erase(self, conversation_id: str, reason: str, timeout: float) -> Erased:
            position = TopicPosition("goaicore.events", 0, 12)
            return Erased(position, key_destroyed=False, already_erased=True)

    monkeypatch.setattr(history_operations, "HistoryOperations", Operations)
    assert cli.main(["erase", "p1"]) == 0
    out = capsys.readouterr().out
    assert out == (
        "p1 was already erased, with no event since: nothing was left to erase "
        "(this erasure is recorded at goaicore.events[0]@12)\n"
    )
    assert "never sealed" not in out
