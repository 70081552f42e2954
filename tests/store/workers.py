"""Run real store worker processes (``goaicore worker``) for tests."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

from kafka import KafkaConsumer, TopicPartition

from goaicore.clients import EventPublisher
from goaicore.clients.snapshots import SnapshotReader
from goaicore.config import Settings
from goaicore.devstack.worker_process import settings_env
from goaicore.kafka.dead_letters import DeadLetter
from goaicore.kafka.partition_reader import read_to_end
from goaicore.records import ConversationSnapshot, GameEvent

# The environment a child process of these settings runs with.
worker_env = settings_env


class StoreWorker:
    """One ``goaicore worker`` process, its log in a file."""

    def __init__(self, settings: Settings, name: str = "worker", **env: str) -> None:
        self.settings = settings
        self.log_path: Path = settings.data_dir / f"{name}.log"
        self.process: subprocess.Popen[bytes] | None = None
        self.extra_env = env

    def start(self) -> StoreWorker:
        with open(self.log_path, "ab") as log:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "goaicore", "worker", "--loglevel", "info"],
                env={**worker_env(self.settings), **self.extra_env},
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        return self

    def kill9(self) -> None:
        assert self.process is not None
        self.process.send_signal(signal.SIGKILL)
        self.process.wait(30)

    def stop(self) -> int:
        if self.process is None or self.process.poll() is not None:
            return self.process.returncode if self.process else 0
        self.process.send_signal(signal.SIGTERM)
        try:
            return self.process.wait(60)
        except subprocess.TimeoutExpired:
            self.process.kill()
            return self.process.wait(30)

    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def task_stacks(self, timeout: float = 10.0) -> str:
        """Where each of the worker's asyncio tasks waits, for a test that found it stuck.

        mode's worker dumps every thread and task on SIGUSR1 into its log; this keeps the
        frames of goaicore, Faust and aiokafka, a line each, one stack per kind of task.
        """
        if not self.alive():
            return "(the worker is not running)"
        assert self.process is not None
        start = len(self.log())
        self.process.send_signal(signal.SIGUSR1)
        deadline = time.monotonic() + timeout
        size = -1
        while time.monotonic() < deadline:  # the dump is written in pieces: wait for its end
            dump = self.log()[start:]
            if "TASKS" in dump and len(dump) == size:
                break
            size = len(dump)
            time.sleep(0.5)
        return task_stacks_digest(self.log()[start:])


_OWN_FRAMES = ("/goaicore/", "/services/", "/faust/", "/aiokafka/")
_CHECKOUT = f"{Path(__file__).resolve().parents[2]}/"


def task_stacks_digest(dump: str) -> str:
    """The tasks of a mode ``cry`` dump, each as its frames in goaicore, Faust and aiokafka
    (``file:line function``, innermost first), identical stacks counted once."""
    stacks: Counter[str] = Counter()
    frames: list[str] = []
    in_tasks = False
    for line in [*dump.splitlines(), "  TASK (end)"]:
        if line.startswith("TASKS"):
            in_tasks = True
        elif in_tasks and line.startswith("  TASK "):
            if frames:
                stacks[" <- ".join(reversed(frames))] += 1
            frames = []
        elif in_tasks and line.startswith('  File "') and any(p in line for p in _OWN_FRAMES):
            path, _, rest = line.strip()[len('File "') :].partition('", line ')
            number, _, function = rest.partition(", in ")
            short = path.split("/site-packages/")[-1].removeprefix(_CHECKOUT)
            frames.append(f"{short}:{number} {function}")
    if not stacks:
        return "(no task dump found in the log)"
    return "\n".join(f"{count}x {stack}" for stack, count in stacks.most_common())


def publish_ticks(
    settings: Settings, prefix: str, events: int = 200, each: int = 10
) -> dict[str, int]:
    """``events`` game events round-robin over conversations ``<prefix>0``, ``<prefix>1``, ...
    (``each`` apiece); the offset of each conversation's last one."""
    conversations = events // each
    with EventPublisher(settings) as publisher:
        positions = publisher.publish_many(
            (f"{prefix}{n % conversations}", GameEvent(kind="tick", text=f"t{n}"))
            for n in range(events)
        )
    return {f"{prefix}{n % conversations}": positions[n].offset for n in range(events)}


def wait_folded(
    settings: Settings,
    last_offsets: dict[str, int],
    timeout: float = 120.0,
    workers: tuple[StoreWorker, ...] = (),
) -> dict[str, ConversationSnapshot]:
    """Wait until each conversation's snapshot has applied its last event's offset."""
    deadline = time.monotonic() + timeout
    seen: dict[str, ConversationSnapshot] = {}
    with SnapshotReader(settings) as reader:
        while time.monotonic() < deadline:
            for worker in workers:
                assert worker.alive(), f"worker died:\n{worker.log()[-4000:]}"
            seen = reader.all(progress=False)
            if all(
                conv in seen
                and seen[conv].last_position is not None
                and seen[conv].last_position.offset >= offset  # type: ignore[union-attr]
                for conv, offset in last_offsets.items()
            ):
                return seen
            time.sleep(0.5)
    missing = {c: o for c, o in last_offsets.items() if c not in seen}
    behind = {}
    for conv, wanted in last_offsets.items():
        position = seen[conv].last_position if conv in seen else None
        folded = position.offset if position is not None else -1
        if conv in seen and folded < wanted:
            behind[conv] = (folded, wanted)
    logs = "".join(f"\n--- {w.log_path.name} ---\n{w.log()[-6000:]}" for w in workers)
    raise AssertionError(
        f"not folded in {timeout:.0f} s: {len(missing)} conversations missing, "
        f"(folded, wanted) offsets of those behind {behind}{logs}"
    )


def dead_letters(settings: Settings, topic: str = "events") -> dict[tuple[int, int], DeadLetter]:
    """Every dead letter of ``topic``'s records so far, by the (partition, offset) it came from."""
    consumer = KafkaConsumer(bootstrap_servers=settings.require_bootstrap())
    letters: dict[tuple[int, int], DeadLetter] = {}
    try:
        for p in range(settings.partitions):
            dead_topic = TopicPartition(settings.topic("dead-letters"), p)
            for record in read_to_end(consumer, dead_topic, settings=settings):
                letter = DeadLetter.from_record(record)
                if letter.topic == settings.topic(topic):
                    letters[(letter.partition, letter.offset)] = letter
    finally:
        consumer.close()
    return letters
