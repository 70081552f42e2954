"""Apache Kafka on this machine: one or more KRaft nodes, each a JVM in combined mode.

Each node is a broker and a controller (``process.roles=broker,controller``) on
free loopback ports, its data, config and log in a folder of its own under the
cluster's folder. One node is a local broker; three make a cluster with a
three-voter quorum, replication factor 3 and ``min.insync.replicas=2``.

The folder keeps the data: a cluster started again on the same folder finds its
formatted storage and its ports (``cluster.json``) and goes on from there.
Nothing here deletes data; stopping a node is SIGTERM to its process group
(Kafka's controlled shutdown), ``kill_node`` is SIGKILL, as a crash would be.
"""

from __future__ import annotations

import base64
import json
import subprocess
import time
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Self

from goaicore.kafka.apache.jars import KAFKA_VERSION, kafka_jars, require_java
from goaicore.kafka.probe import kafka_known_brokers
from goaicore.kafka.process import BrokerExited, BrokerProcess, BrokerStartError, wait_answering
from goaicore.lifecycle import Running
from goaicore.net import free_loopback_port, port_open, wait_port_closed
from goaicore.stopping import Pause

HOST = "127.0.0.1"
CLIENT_LISTENER = "PLAINTEXT"
CONTROLLER_LISTENER = "CONTROLLER"
_STATE_FILE = "cluster.json"

_LOG4J = """\
log4j.rootLogger=INFO, stdout
log4j.appender.stdout=org.apache.log4j.ConsoleAppender
log4j.appender.stdout.layout=org.apache.log4j.PatternLayout
log4j.appender.stdout.layout.ConversionPattern=[%d] %p %m (%c)%n
log4j.logger.kafka.request.logger=WARN
log4j.logger.org.apache.kafka.clients=WARN
"""


@dataclass(frozen=True)
class Listener:
    """A further client listener on every node, e.g. ``Listener("SCRAM", "SASL_PLAINTEXT")``.

    ``config`` holds the listener's own settings without their prefix; they are
    written as ``listener.name.<name>.<key>`` (for example ``sasl.enabled.mechanisms``,
    ``ssl.keystore.location``).
    """

    name: str
    protocol: str
    config: Mapping[str, str] = field(default_factory=dict)


@dataclass
class _NodePorts:
    client: int
    controller: int
    extra: dict[str, int]


class KafkaNode:
    """One KRaft node (broker + controller): its folder, ports and JVM."""

    def __init__(self, cluster: LocalKafka, node_id: int, ports: _NodePorts) -> None:
        self.cluster = cluster
        self.node_id = node_id
        self.ports = ports
        self.folder = cluster.folder / f"node-{node_id}"
        self.log_path = self.folder / "kafka.log"
        self._process: BrokerProcess | None = None

    @property
    def bootstrap(self) -> str:
        return f"{HOST}:{self.ports.client}"

    @property
    def pid(self) -> int | None:
        return self._process.pid if self._process else None

    def running(self) -> bool:
        return self._process is not None and self._process.running()

    def config(self) -> dict[str, str]:
        """The node's server.properties, test or dev overrides last."""
        cluster = self.cluster
        size = len(cluster.nodes)
        listeners = {CLIENT_LISTENER: self.ports.client, CONTROLLER_LISTENER: self.ports.controller}
        protocols = {CLIENT_LISTENER: "PLAINTEXT", CONTROLLER_LISTENER: "PLAINTEXT"}
        for listener in cluster.listeners:
            listeners[listener.name] = self.ports.extra[listener.name]
            protocols[listener.name] = listener.protocol
        advertised = {k: v for k, v in listeners.items() if k != CONTROLLER_LISTENER}
        config = {
            "process.roles": "broker,controller",
            "node.id": str(self.node_id),
            "controller.quorum.voters": cluster.voters(),
            "listeners": ",".join(f"{k}://{HOST}:{v}" for k, v in listeners.items()),
            "advertised.listeners": ",".join(f"{k}://{HOST}:{v}" for k, v in advertised.items()),
            "listener.security.protocol.map": ",".join(f"{k}:{v}" for k, v in protocols.items()),
            "controller.listener.names": CONTROLLER_LISTENER,
            "inter.broker.listener.name": CLIENT_LISTENER,
            "log.dirs": str(self.folder / "data"),
            "num.partitions": "1",
            "default.replication.factor": str(size),
            "min.insync.replicas": "2" if size >= 3 else "1",
            "offsets.topic.replication.factor": str(size),
            "transaction.state.log.replication.factor": str(size),
            "transaction.state.log.min.isr": "2" if size >= 3 else "1",
            "auto.create.topics.enable": "false",
            **cluster.overrides,
        }
        for listener in cluster.listeners:
            for key, value in listener.config.items():
                config[f"listener.name.{listener.name.lower()}.{key}"] = value
        return config

    def write_config(self) -> Path:
        self.folder.mkdir(parents=True, exist_ok=True)
        path = self.folder / "server.properties"
        lines = [f"{key}={_escape(value)}" for key, value in self.config().items()]
        path.write_text("\n".join(lines) + "\n")
        (self.folder / "log4j.properties").write_text(_LOG4J)
        return path

    def formatted(self) -> bool:
        return (self.folder / "data" / "meta.properties").is_file()

    def format_command(self) -> list[str]:
        command = self._java("kafka.tools.StorageTool", heap="256m")
        command += [
            "format",
            "-t",
            self.cluster.cluster_id,
            "-c",
            str(self.folder / "server.properties"),
        ]
        for mechanism, users in self.cluster.scram_users.items():
            for name, password in users.items():
                command += ["--add-scram", f"{mechanism}=[name={name},password={password}]"]
        return command

    def start(self) -> None:
        if self.running():
            return
        self.write_config()
        command = self._java("kafka.Kafka", heap=self.cluster.heap)
        command.append(str(self.folder / "server.properties"))
        self._process = BrokerProcess(
            command, self.log_path, cwd=self.folder, with_parent=self.cluster.with_parent
        )
        self._process.start()

    def wait_ready(self, deadline: float, pause: Pause = time.sleep) -> None:
        """Return once the node answers ApiVersions on its client listener (it is unfenced)."""
        if self._process is None:
            raise BrokerStartError(f"Apache Kafka node {self.node_id} was never started")
        try:
            last = wait_answering(self._process, HOST, self.ports.client, deadline, 0.1, pause)
        except BrokerExited as exited:
            raise BrokerStartError(
                f"Apache Kafka node {self.node_id} exited with code {exited.code} while starting "
                f"(log {self.log_path}): {_last_error(self.log_path)}"
            ) from None
        if last:
            raise BrokerStartError(
                f"Apache Kafka node {self.node_id} on {self.bootstrap} did not answer in time "
                f"({last}; log {self.log_path})"
            )

    def stop(self, grace: float = 20.0) -> None:
        """Controlled shutdown (SIGTERM), SIGKILL after ``grace``; the data stays."""
        process, self._process = self._process, None
        if process is not None:
            process.stop(grace=grace)
            self._wait_ports_closed()

    def terminate(self) -> None:
        """Ask for a controlled shutdown (SIGTERM) without waiting for it."""
        if self._process is not None:
            self._process.terminate()

    def kill(self) -> None:
        """SIGKILL, as a crash: no controlled shutdown, the data stays as it was."""
        process, self._process = self._process, None
        if process is not None:
            process.kill()
            self._wait_ports_closed()

    def _wait_ports_closed(self) -> None:
        for port in (self.ports.client, self.ports.controller, *self.ports.extra.values()):
            wait_port_closed(HOST, port, timeout=10)

    def _java(self, main: str, heap: str) -> list[str]:
        libs = self.cluster.jars[0].parent
        return [
            self.cluster.java,
            f"-Xmx{heap}",
            "-Xms64m",
            "-XX:+UseG1GC",
            "-XX:MaxGCPauseMillis=20",
            "-Djava.awt.headless=true",
            f"-Dlog4j.configuration=file:{self.folder / 'log4j.properties'}",
            "-cp",
            f"{libs}/*",
            main,
        ]


class LocalKafka(Running):
    """Apache Kafka (KRaft) on loopback: ``nodes=1`` a broker, ``nodes=3`` a cluster.

    ``overrides`` go last into every node's server.properties: tests put the
    settings that make them fast there (never goaicore's client settings).
    ``scram_users`` ({mechanism: {user: password}}) are created when the storage is
    formatted, for SASL/SCRAM listeners.
    """

    def __init__(
        self,
        folder: Path,
        nodes: int = 1,
        overrides: Mapping[str, str] | None = None,
        listeners: Sequence[Listener] = (),
        scram_users: Mapping[str, Mapping[str, str]] | None = None,
        heap: str = "512m",
        with_parent: bool = False,
    ) -> None:
        if nodes < 1:
            raise ValueError("a cluster needs at least one node")
        self.folder = folder
        self.overrides = dict(overrides or {})
        self.listeners = tuple(listeners)
        self.scram_users = {m: dict(u) for m, u in (scram_users or {}).items()}
        self.heap = heap
        self.with_parent = with_parent  # nodes stop when this process dies (Linux)
        self.version = KAFKA_VERSION
        self.java = ""
        self.jars: list[Path] = []
        self.cluster_id, ports = self._load_state(nodes)
        self.nodes = [KafkaNode(self, n + 1, p) for n, p in enumerate(ports)]

    @property
    def bootstrap_servers(self) -> str:
        """Every node's plaintext client listener, comma-separated."""
        return ",".join(node.bootstrap for node in self.nodes)

    def bootstrap(self, listener: str) -> str:
        """Every node's address on one of the extra ``listeners``."""
        return ",".join(f"{HOST}:{node.ports.extra[listener]}" for node in self.nodes)

    def voters(self) -> str:
        return ",".join(f"{n.node_id}@{HOST}:{n.ports.controller}" for n in self.nodes)

    def start(self, timeout: float = 180.0, pause: Pause = time.sleep) -> Self:
        """Fetch the jars if needed, format new storage, start every node, wait for all.

        ``pause`` sleeps between the readiness tries (a ``Stopping.pause`` ends them)."""
        self.java = require_java()
        self.jars = kafka_jars(self.version)
        self.folder.mkdir(parents=True, exist_ok=True)
        self._save_state()
        try:
            self._format(timeout)
            for node in self.nodes:
                node.start()
            deadline = time.monotonic() + timeout
            for node in self.nodes:
                node.wait_ready(deadline, pause)
            self._wait_registered(deadline, pause)
        except BaseException:
            self.stop(grace=5)
            raise
        return self

    def start_node(self, index: int, timeout: float = 120.0, pause: Pause = time.sleep) -> None:
        """Start node ``index`` (0-based) again on its data and ports."""
        node = self.nodes[index]
        node.start()
        deadline = time.monotonic() + timeout
        node.wait_ready(deadline, pause)
        self._wait_registered(deadline, pause)

    def kill_node(self, index: int) -> None:
        self.nodes[index].kill()

    def stop_node(self, index: int, grace: float = 20.0) -> None:
        self.nodes[index].stop(grace)

    def stop(self, grace: float = 20.0) -> None:
        """Stop every node: controlled shutdown in parallel, SIGKILL after ``grace``."""
        running = [node for node in self.nodes if node.running()]
        for node in running:
            node.terminate()
        for node in running:
            node.stop(grace)

    def _wait_registered(self, deadline: float, pause: Pause = time.sleep) -> None:
        """Wait until every running node lists every running node and a controller among them.

        A node answers before the others know it: an admin request routed to it
        as the controller would fail with an unknown broker id.
        """
        running = [node for node in self.nodes if node.running()]
        wanted = {node.node_id for node in running}
        last = ""
        while time.monotonic() < deadline:
            last = ""
            for node in running:
                known = kafka_known_brokers(HOST, node.ports.client, 2.0)
                if isinstance(known, str):
                    last = f"node {node.node_id}: {known}"
                elif not known[0] >= wanted or known[1] not in known[0]:
                    last = f"node {node.node_id} knows {sorted(known[0])}, controller {known[1]}"
                if last:
                    break
            if not last:
                return
            pause(0.1)
        raise BrokerStartError(
            f"Apache Kafka nodes {sorted(wanted)} answer but do not all know each other ({last})"
        )

    def _format(self, timeout: float) -> None:
        pending = [node for node in self.nodes if not node.formatted()]
        for node in self.nodes:
            node.write_config()
        runs = [
            (
                node,
                subprocess.Popen(
                    node.format_command(),
                    stdout=subprocess.PIPE,
                    stderr=subprocess.STDOUT,
                    stdin=subprocess.DEVNULL,
                ),
            )
            for node in pending
        ]
        for node, run in runs:
            try:
                output, _ = run.communicate(timeout=timeout)
            except subprocess.TimeoutExpired:
                run.kill()
                raise BrokerStartError(
                    f"formatting Apache Kafka node {node.node_id} took over {timeout:.0f} s"
                ) from None
            if run.returncode != 0:
                text = output.decode(errors="replace").strip().splitlines()
                raise BrokerStartError(
                    f"formatting Apache Kafka node {node.node_id} failed: "
                    f"{text[-1] if text else 'no output'}"
                )

    def _load_state(self, nodes: int) -> tuple[str, list[_NodePorts]]:
        """The cluster id and ports saved in the folder, or new ones."""
        try:
            state = json.loads((self.folder / _STATE_FILE).read_text())
            saved = [
                _NodePorts(p["client"], p["controller"], dict(p["extra"])) for p in state["nodes"]
            ]
            names = {listener.name for listener in self.listeners}
            if len(saved) == nodes and all(set(p.extra) == names for p in saved):
                if not any(port_open(HOST, p.client) for p in saved):
                    return str(state["cluster_id"]), saved
                raise BrokerStartError(
                    f"the ports of the Apache Kafka in {self.folder} are taken: "
                    "is it running already?"
                )
        except (OSError, ValueError, KeyError, TypeError):
            pass
        cluster_id = _new_cluster_id()
        fresh = [
            _NodePorts(
                free_loopback_port(),
                free_loopback_port(),
                {listener.name: free_loopback_port() for listener in self.listeners},
            )
            for _ in range(nodes)
        ]
        return cluster_id, fresh

    def _save_state(self) -> None:
        state = {
            "version": self.version,
            "cluster_id": self.cluster_id,
            "nodes": [
                {"client": n.ports.client, "controller": n.ports.controller, "extra": n.ports.extra}
                for n in self.nodes
            ],
        }
        (self.folder / _STATE_FILE).write_text(json.dumps(state, indent=2) + "\n")


def _new_cluster_id() -> str:
    """A random cluster id, never starting with "-" (the format tool would read an option)."""
    while True:
        cluster_id = base64.urlsafe_b64encode(uuid.uuid4().bytes).rstrip(b"=").decode()
        if not cluster_id.startswith("-"):
            return cluster_id


def _escape(value: str) -> str:
    """A Java properties value: backslashes doubled, so paths and JAAS configs stay as given."""
    return value.replace("\\", "\\\\").replace("\n", "\\n")


def _last_error(log_path: Path) -> str:
    try:
        lines = log_path.read_text(errors="replace").splitlines()
    except OSError:
        return "no log"
    for line in reversed(lines):
        if " ERROR " in line or "Exception" in line:
            return line.strip()[:300]
    return lines[-1].strip()[:300] if lines else "empty log"
