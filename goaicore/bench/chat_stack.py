"""What the suites timing chat turns share: a store worker process asking a scripted
LLM, the bare aiokafka echo service beside it (the floor under a turn), and their
latencies as p50 and p99 rows.

``chat`` and ``stream`` each start a :func:`chat_stack` on the broker the runner
started for them: topics created, one worker process (``goaicore worker``, its LLM
the scripted OpenAI-compatible server it is given) and one echo service
(``goaicore.bench.echo``), both stopped when the block ends.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from goaicore.bench import echo
from goaicore.bench.registry import Measurement
from goaicore.devstack.worker_process import settings_env
from goaicore.kafka.topics import ensure_topics
from goaicore.settings import Settings
from goaicore.testing import OpenAIServer

QUANTILES = (0.5, 0.99)


def percentile(values: list[float], q: float) -> float:
    """The nearest-rank ``q`` quantile of ``values`` (the largest for p99 of few)."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def percentile_rows(
    suite: str,
    kind: str,
    seconds: list[float],
    params: dict[str, Any],
    note: str,
    baseline: str | None = None,
    also: tuple[str, ...] = (),
) -> list[Measurement]:
    """``kind p50`` and ``kind p99`` of ``seconds``, in ms, each against the same
    quantile of ``baseline`` (and of each of ``also``)."""
    rows = []
    for q in QUANTILES:
        p = f"p{int(q * 100)}"
        rows.append(
            Measurement(
                suite,
                f"{kind} {p}",
                percentile(seconds, q) * 1000,
                "ms",
                dict(params),
                note,
                baseline=f"{baseline} {p}" if baseline else None,
                also_versus=tuple(f"{name} {p}" for name in also),
            )
        )
    return rows


def start_worker(settings: Settings, llm: OpenAIServer) -> subprocess.Popen[bytes]:
    """``goaicore worker`` as a child process calling ``llm`` for every turn (output
    in ``worker.log`` in the data dir); the caller terminates it."""
    env = {k: v for k, v in settings_env(settings).items() if not k.startswith("ANTHROPIC_")}
    env.update(OPENAI_API_KEY="bench", OPENAI_BASE_URL=llm.base_url)
    with open(settings.data_dir / "worker.log", "ab") as log:
        return subprocess.Popen(
            [sys.executable, "-m", "goaicore", "worker"], env=env, stdout=log, stderr=log
        )


@dataclass(frozen=True)
class ChatStack:
    """A running worker and echo service on ``settings``' broker and topics."""

    settings: Settings
    llm: OpenAIServer
    worker: subprocess.Popen[bytes]


@contextmanager
def chat_stack(settings: Settings, llm: OpenAIServer) -> Iterator[ChatStack]:
    """Create the topics, start a worker asking ``llm`` and the echo service; stop both
    at the end. The worker takes requests once it is up: ask once (unmeasured) first."""
    ensure_topics(settings)
    worker = start_worker(settings, llm)
    try:
        echo_service = echo.start_service(settings)
    except BaseException:
        worker.terminate()
        worker.wait(60)
        raise
    try:
        yield ChatStack(settings, llm, worker)
    finally:
        echo_service.terminate()
        worker.terminate()
        echo_service.wait(60)
        worker.wait(60)
