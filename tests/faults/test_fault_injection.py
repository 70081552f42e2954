"""Seeded fault injection against a real worker and projector on the session broker.

A random mix of valid events, oversized bodies, undecodable bytes, wrong keys,
unknown schema fingerprints, duplicate event ids, chat requests (some calling
tools, some with results far over the record limit), and kill -9 of the worker
and of the projector at random points. At the end every valid event is in the
log once and folded, every invalid record is a dead letter with its reason,
every chat request has its reply (repeats of it identical), and ``verify`` and
``verify --db`` pass. ``GOAICORE_FAULT_SEED`` repeats a run exactly.
"""

from __future__ import annotations

import os
import random
import subprocess
import time
import uuid
from collections import Counter

import pytest

from goaicore.clients import HistoryReader
from goaicore.config import Settings
from goaicore.devstack.worker_process import settings_env
from goaicore.kafka import ensure_topics
from goaicore.records import ReplyStatus
from goaicore.testing import OpenAIServer
from tests.chat_agent.helpers import ChatWorker, Replies, ScriptedLLM, llm_env, wait_http
from tests.cli import run_goaicore
from tests.faults.injector import Books, Injector
from tests.projector.helpers import ProjectorProcess
from tests.store.workers import dead_letters, wait_folded

SEED = int(os.environ.get("GOAICORE_FAULT_SEED", "20261123"))
OPERATIONS = int(os.environ.get("GOAICORE_FAULT_OPERATIONS", "240"))
# The worker's GOAICORE_SNAPSHOT_FLUSH_MS (its default unless set), to run at its extremes.
FLUSH_MS = os.environ.get("GOAICORE_FAULT_SNAPSHOT_FLUSH_MS")
TOOLS = "tests.faults.tools:registry"

pytestmark = pytest.mark.timeout(1200)


def _worker(settings: Settings, llm: OpenAIServer, name: str) -> ChatWorker:
    worker = ChatWorker(settings, name, GOAICORE_TOOLS=TOOLS, **llm_env(llm)).start()
    wait_http(worker.url, timeout=120)
    return worker


def _cli(settings: Settings, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**settings_env(settings), "GOAICORE_DB_SCHEMA": settings.db_schema}
    return run_goaicore(*args, env=env, timeout=300)


def test_random_faults_lose_nothing_double_nothing_and_stop_nothing(settings: Settings) -> None:
    settings = settings.with_overrides(db_schema=f"faults_{uuid.uuid4().hex[:8]}")
    if FLUSH_MS is not None:
        settings = settings.with_overrides(snapshot_flush_ms=int(FLUSH_MS))
    ensure_topics(settings)
    rng_kills = random.Random(SEED + 1)
    worker_kill = rng_kills.randrange(OPERATIONS // 4, OPERATIONS // 2)
    projector_kills = sorted(rng_kills.sample(range(10, OPERATIONS - 10), 2))
    kills: Counter[str] = Counter()

    with OpenAIServer(responder=ScriptedLLM()) as llm, Replies(settings) as replies:
        worker = _worker(settings, llm, "worker-0")
        projector = ProjectorProcess(settings, name="projector-0").start()
        injector = Injector(settings, SEED, replies)
        try:
            for index in range(OPERATIONS):
                injector.step()
                if index == worker_kill:
                    worker.kill9()
                    kills["worker kill -9"] += 1
                    worker = _worker(settings, llm, f"worker-{kills['worker kill -9']}")
                if index in projector_kills:
                    assert projector.process is not None
                    projector.process.kill()
                    projector.process.wait(30)
                    kills["projector kill -9"] += 1
                    name = f"projector-{kills['projector kill -9']}"
                    projector = ProjectorProcess(settings, name=name).start()
            books = injector.books
            for request_id in books.requests:
                replies.wait(request_id, timeout=600)
            last = {conv: max(o for _, o, _ in sent) for conv, sent in books.valid.items()}
            wait_folded(settings, last, timeout=600, workers=(worker,))
            _wait_verified_db(settings)
            verified = _cli(settings, "verify")
            assert verified.returncode == 0, verified.stdout[-3000:] + verified.stderr
            report = _check(settings, books, replies)
            assert worker.alive(), worker.log()[-3000:]
            assert projector.process is not None
            assert projector.process.poll() is None, projector.log()[-3000:]
        finally:
            injector.close()
            worker.stop()
            projector.stop()
    _print_report(books, kills, report)
    assert report["lost"] == 0
    assert report["doubled"] == 0


def _wait_verified_db(settings: Settings, timeout: float = 300.0) -> None:
    """``verify --db`` exits 0 with nothing pending (the projector caught up)."""
    deadline = time.monotonic() + timeout
    while True:
        done = _cli(settings, "verify", "--db")
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr
        if " 0 pending" in done.stdout.splitlines()[-1] or time.monotonic() > deadline:
            assert " 0 pending" in done.stdout.splitlines()[-1], done.stdout[-2000:]
            return
        time.sleep(2)


def _check(settings: Settings, books: Books, replies: Replies) -> dict[str, int]:
    """Lost and doubled records, by what each should have become."""
    lost = doubled = 0
    with HistoryReader(settings) as history:
        for conversation, sent in books.valid.items():
            logged = Counter((e.partition, e.offset) for e in history.logged_events(conversation))
            for partition, offset, _ in sent:
                copies = logged[(partition, offset)]
                lost += copies == 0
                doubled += copies > 1
    letters = dead_letters(settings)
    wrong_reason = 0
    for position, reasons in books.dead.items():
        found = letters.get(position)
        if found is None:
            lost += 1
        elif found.reason not in reasons.split("|"):
            wrong_reason += 1
    replies_differ = 0
    for request_id in books.requests:
        answers = {(r.status, r.text, r.error) for r in replies.seen[request_id]}
        replies_differ += len(answers) > 1
        lost += not answers
    assert wrong_reason == 0
    ok = sum(replies.seen[r][0].status == ReplyStatus.OK for r in books.requests)
    return {
        "lost": lost,
        "doubled": doubled + replies_differ,
        "dead letters": len(books.dead),
        "replies ok": ok,
    }


def _print_report(books: Books, kills: Counter[str], report: dict[str, int]) -> None:
    lines = [f"fault injection, seed {SEED}, {OPERATIONS} operations"]
    for kind, count in sorted(books.counts.items()):
        lines.append(f"  {kind:<22} {count:>5}")
    for kind, count in sorted(kills.items()):
        lines.append(f"  {kind:<22} {count:>5}")
    lines.append(f"  {'refused by the client':<22} {books.refused_by_client:>5}")
    valid = sum(len(sent) for sent in books.valid.values())
    lines.append(f"  valid events folded    {valid:>5}")
    lines.append(f"  dead letters expected  {report['dead letters']:>5}")
    lines.append(f"  chat requests answered {len(books.requests):>5} ({report['replies ok']} ok)")
    lines.append(f"  lost {report['lost']}, doubled {report['doubled']}")
    print("\n".join(lines))
