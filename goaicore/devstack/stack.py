"""The local stack behind ``goaicore dev``: broker, PostgreSQL, topics, dev.json.

It starts only what is not configured (when ``KAFKA_BOOTSTRAP_SERVERS`` is
unset, the local broker ``GOAICORE_LOCAL_BROKER`` names: the embedded one, or
Apache Kafka keeping its data in ``<data dir>/kafka``; PostgreSQL by
discovery). Once its owner has seen it work, ``publish()`` writes the endpoints to
``<data dir>/dev.json`` (owner-only, atomically) so other commands find a ready
stack; ``watch()`` starts again a process that stopped; ``stop()`` removes dev.json
and stops exactly what it started. Its children end with it even when it is killed.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import time
import uuid
from dataclasses import asdict, dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from goaicore.devstack.console_process import ConsoleProcess
from goaicore.devstack.projector_process import ProjectorProcess
from goaicore.devstack.worker_process import WorkerProcess
from goaicore.errors import ConfigError, GoaicoreError
from goaicore.kafka.apache import KafkaUnavailable
from goaicore.kafka.local import LocalBroker, stop_orphaned_kafka
from goaicore.kafka.topics import TopicStatus, ensure_topics
from goaicore.net import free_loopback_port
from goaicore.projection.postgres.discovery import (
    LOCAL_SERVER,
    DatabaseHandle,
    discover_postgres,
    ensure_database,
)
from goaicore.settings import (
    DEV_FILE_NAME,
    Settings,
    local_master_keys_file,
    read_dev_file,
    read_local_master_keys,
)
from goaicore.stopping import Pause, Stopping

if TYPE_CHECKING:
    from goaicore.devstack.demo import DemoStep

DEV_DATABASE = "goaicore"
CHECK_TOPIC = "stack-check"
KAFKA_FOLDER = "kafka"
# In the dev database: which log each projection schema was built from.
PROJECTED_LOG_TABLE = "goaicore_dev_projected_log"
# Held (flock) by the stack that owns the data dir, from its start to its stop; the
# kernel lets go of it when that process dies, however it dies.
LOCK_FILE_NAME = "dev.lock"
# A process that stops this many times within the window is not started again.
RESTART_LIMIT = 3
RESTART_WINDOW = 60.0


class StackError(GoaicoreError, RuntimeError):
    """A process of the dev stack stopped, or did not do its first job in time."""


@dataclass(frozen=True)
class StackInfo:
    """What dev.json holds: where each part of the running stack is."""

    pid: int
    bootstrap_servers: str
    broker: str  # what it is: "Apache Kafka 3.9.1 (KRaft, data in ...)"
    broker_kind: str  # "kafka", "embedded" or "external" (KAFKA_BOOTSTRAP_SERVERS)
    broker_version: str | None
    broker_data_dir: str | None
    broker_profile: str
    broker_embedded: bool
    broker_pid: int | None
    worker_pid: int | None
    projector_pid: int | None
    database_url: str
    database_source: str
    db_schema: str
    topic_prefix: str
    partitions: int
    http_url: str | None
    started_at: str
    projector_url: str | None = None
    """The projector's /metrics and /health."""
    console_pid: int | None = None
    console_url: str | None = None
    """The auditor's console."""


@dataclass(frozen=True)
class StackCheck:
    """The round-trip proof: one record through the broker, one row through PostgreSQL."""

    topic: str
    partition: int
    offset: int
    record_ms: float
    table: str
    row_id: int
    row_ms: float


class LocalStack:
    """Start, describe and stop the local stack; a context manager."""

    def __init__(
        self,
        settings: Settings,
        local_postgres: tuple[str, int] = LOCAL_SERVER,
        schema_given: bool | None = None,
        stopping: Stopping | None = None,
    ) -> None:
        """``stopping``: asked for (by a signal), it ends ``start()`` and the checks at their
        next step or wait with StopRequested; ``start()`` then stops what it started."""
        self.settings = settings
        self.stopping = stopping or Stopping()
        self.local_postgres = local_postgres
        self.broker: LocalBroker | None = None
        self.database: DatabaseHandle | None = None
        self.info: StackInfo | None = None
        self.topics: list[TopicStatus] = []
        self.worker: WorkerProcess | None = None
        self.projector: ProjectorProcess | None = None
        self.console: ConsoleProcess | None = None
        self.schema_choice: SchemaChoice | None = None
        self.schema_given = schema_given
        self.published = False
        self.master_keys_file: Path | None = None
        """Where the stack's own master keys are, when it made or read them there."""
        self._lock: int | None = None
        self._left_behind: dict[str, Any] = {}
        self._stops: dict[str, list[float]] = {}

    def _schema_given(self) -> bool:
        if self.schema_given is not None:
            return self.schema_given
        return bool(os.environ.get("GOAICORE_DB_SCHEMA"))

    @property
    def dev_file(self) -> Path:
        return self.settings.data_dir / DEV_FILE_NAME

    @property
    def lock_file(self) -> Path:
        return self.settings.data_dir / LOCK_FILE_NAME

    def start(self) -> StackInfo:
        """Start what is not configured; dev.json is written later, by ``publish()``."""
        if self.settings.bootstrap_servers is None and self.settings.security_protocol not in (
            None,
            "PLAINTEXT",
        ):
            raise ConfigError(
                f"KAFKA_SECURITY_PROTOCOL={self.settings.security_protocol}, but "
                "KAFKA_BOOTSTRAP_SERVERS is unset, so the dev stack starts its own broker, "
                "which speaks PLAINTEXT on loopback: unset KAFKA_SECURITY_PROTOCOL, or set "
                "KAFKA_BOOTSTRAP_SERVERS"
            )
        self.settings.data_dir.mkdir(parents=True, exist_ok=True)
        self._take_lock()
        # Holding the lock, a dev.json here is a killed stack's: what it names is read
        # (a broker it left running is ours to stop), then it goes, as it is not true.
        self._left_behind = _dev_file_left_behind(self.dev_file)
        self.dev_file.unlink(missing_ok=True)
        step = self.stopping.check  # between the steps: each leaves what it started known
        try:
            step()
            settings = self.settings
            if settings.bootstrap_servers is None:
                self.broker = self._start_broker(settings)
                step()
                settings = settings.with_overrides(
                    bootstrap_servers=self.broker.bootstrap_servers,
                    broker_profile=self.broker.profile,
                    security_protocol="PLAINTEXT",  # the stack's own broker, on loopback
                )
            # No live dev stack owns this data dir (checked above), so an embedded
            # server still running on it was orphaned by a killed stack: ours to stop.
            self.database = discover_postgres(
                settings, local_server=self.local_postgres, adopt_orphan=True
            )
            step()
            url = self.database.url
            if self.database.source != "DATABASE_URL":
                url = ensure_database(url, DEV_DATABASE)
            settings = settings.with_overrides(database_url=url)
            if settings.master_keys is None:  # the stack seals content, so erase works
                settings = settings.with_overrides(
                    master_keys=ensure_local_master_keys(settings.data_dir)
                )
                self.master_keys_file = local_master_keys_file(settings.data_dir)
            self.topics = ensure_topics(settings)
            self.settings = settings
            step()
            web_port = free_loopback_port()
            self.worker = WorkerProcess(
                settings, settings.data_dir / "worker.log", web_port=web_port
            ).start()
            # A projection kept in the dev database describes the log it was built
            # from. A broker holding another log (the memory-only one always does)
            # gets a schema of its own: earlier rows are never cleared or mixed in.
            if self.broker is not None:
                self.schema_choice = choose_schema(
                    url,
                    settings.db_schema,
                    self._schema_given(),
                    self.broker.log_id,
                    settings.topic_prefix,
                )
                settings = settings.with_overrides(db_schema=self.schema_choice.schema)
                self.settings = settings
            step()
            projector_port = free_loopback_port()
            self.projector = ProjectorProcess(
                settings, settings.data_dir / "projector.log", web_port=projector_port
            ).start()
            step()
            console_port = free_loopback_port()
            self.console = ConsoleProcess(
                settings, settings.data_dir / "console.log", web_port=console_port
            ).start()
            step()
            broker = self.broker
            self.info = StackInfo(
                pid=os.getpid(),
                bootstrap_servers=settings.require_bootstrap(),
                broker=broker.description if broker else "KAFKA_BOOTSTRAP_SERVERS",
                broker_kind=broker.kind if broker else "external",
                broker_version=broker.version if broker else None,
                broker_data_dir=str(broker.folder) if broker and broker.folder else None,
                broker_profile=settings.broker_profile,
                broker_embedded=broker is not None and broker.kind == "embedded",
                broker_pid=broker.pid if broker else None,
                worker_pid=self.worker.pid,
                projector_pid=self.projector.pid,
                database_url=url,
                database_source=self.database.source,
                db_schema=settings.db_schema,
                topic_prefix=settings.topic_prefix,
                partitions=settings.partitions,
                http_url=f"http://127.0.0.1:{web_port}",
                projector_url=f"http://127.0.0.1:{projector_port}",
                console_pid=self.console.pid,
                console_url=f"http://127.0.0.1:{console_port}",
                started_at=datetime.now(UTC).isoformat(timespec="seconds"),
            )
            return self.info
        except BaseException:
            self.stop()
            raise

    def _take_lock(self) -> None:
        """Own the data dir for this process's life, or say which stack does."""
        fd = os.open(self.lock_file, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            holder = os.read(fd, 32).decode(errors="replace").strip() or "unknown"
            os.close(fd)
            raise ConfigError(
                f"a dev stack is already running (pid {holder}, {self.dev_file}); "
                "stop it first or use another GOAICORE_DATA_DIR"
            ) from None
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()}\n".encode())
        self._lock = fd

    def publish(self) -> Path:
        """Write dev.json, once the stack has shown it works: a file that exists is a
        ready stack, so a script waiting for it never races the stack's own checks."""
        self._write_dev_file(self.started())
        self.published = True
        return self.dev_file

    def _start_broker(self, settings: Settings) -> LocalBroker:
        """The local broker ``GOAICORE_LOCAL_BROKER`` names, started."""
        kind = settings.local_broker
        folder = settings.data_dir / KAFKA_FOLDER
        if kind == "kafka":
            # No live dev stack owns this data dir (checked by start), so an Apache
            # Kafka that a killed stack left running on its folder is ours to stop.
            stale = self._left_behind
            pid = stale.get("broker_pid") if stale.get("broker_kind") == "kafka" else None
            if isinstance(pid, int):
                stop_orphaned_kafka(pid, folder.resolve())
        broker = LocalBroker(
            kind,
            folder=folder if kind == "kafka" else None,
            log_path=settings.data_dir / "broker.log",
            with_parent=True,
        )
        self.broker = broker  # stopped by stop() if starting fails half way
        try:
            return broker.start(pause=self.stopping.pause)
        except KafkaUnavailable as err:
            raise KafkaUnavailable(f"GOAICORE_LOCAL_BROKER=kafka, but {err}") from None

    def _write_dev_file(self, info: StackInfo) -> None:
        """Readable by its owner only (it holds the database URL, password included),
        and replaced whole: a reader sees the old file or the new one, never a part."""
        tmp = self.dev_file.with_suffix(".tmp")
        tmp.unlink(missing_ok=True)  # one left by a killed stack may have another mode
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as out:
            out.write(json.dumps(asdict(info), indent=2) + "\n")
        tmp.replace(self.dev_file)

    def watch(self) -> list[str]:
        """Start again each process of the stack found stopped; a line saying so for each.

        PostgreSQL and the broker come first, as the others need them. A StackError when
        one has stopped RESTART_LIMIT times within RESTART_WINDOW seconds, or when the
        embedded broker stopped: its memory-only log went with it.
        """
        said: list[str] = []
        server = self.database.embedded if self.database is not None else None
        if server is not None and not server.running():
            self._stopped("embedded PostgreSQL", server.log_path)
            said.append(self._restart("embedded PostgreSQL", server.log_path, server.start))
        broker = self.broker
        if broker is not None and not broker.running():
            if broker.kafka is None:
                raise StackError(
                    f"the embedded broker stopped, and its memory-only log with it; see "
                    f"{broker.server_log}; start the dev stack again"
                )
            kafka = broker.kafka
            self._stopped("Apache Kafka", broker.server_log)
            pause = self.stopping.pause
            said.append(
                self._restart(
                    "Apache Kafka", broker.server_log, lambda: kafka.start_node(0, pause=pause)
                )
            )
        for name, child in (
            ("store worker", self.worker),
            ("projector", self.projector),
            ("console", self.console),
        ):
            if child is not None and child.process is not None and not child.alive():
                code = child.process.returncode
                self._stopped(name, child.log_path)
                said.append(
                    self._restart(f"{name} (exit code {code})", child.log_path, child.start)
                )
        if said and self.info is not None:
            self.info = replace(
                self.info,
                broker_pid=broker.pid if broker is not None else None,
                worker_pid=self.worker.pid if self.worker else None,
                projector_pid=self.projector.pid if self.projector else None,
                console_pid=self.console.pid if self.console else None,
            )
            if self.published:
                self._write_dev_file(self.info)
        return said

    def _stopped(self, name: str, log_path: Path | None) -> None:
        """Count one stop of ``name``; a StackError when it stops too often to go on.

        Once the stack is stopping, StopRequested instead: a Ctrl-C reaches its children
        too, and one that ended with it is not started again."""
        self.stopping.check()
        now = time.monotonic()
        recent = [t for t in self._stops.get(name, []) if now - t < RESTART_WINDOW] + [now]
        self._stops[name] = recent
        if len(recent) >= RESTART_LIMIT:
            raise StackError(
                f"the {name} stopped {len(recent)} times in {RESTART_WINDOW:.0f} s; see "
                f"{log_path}; stopping the dev stack"
            )

    @staticmethod
    def _restart(name: str, log_path: Path | None, start: Any) -> str:
        """Start one process again: the line that says so, or why it did not start."""
        try:
            start()
        except (GoaicoreError, OSError) as err:
            first = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
            return f"the {name} stopped and did not start again ({first}); trying again"
        return f"the {name} stopped; started it again (log: {log_path})"

    def check(self) -> StackCheck:
        """Send one record through the broker and one row through PostgreSQL."""
        return check_stack(self.settings, self.stopping.pause)

    def check_fold(self, timeout: float = 90.0) -> FoldCheck:
        """Publish one game event and wait until the worker has folded it into a snapshot."""
        return fold_round_trip(self.settings, timeout, self.worker, self.stopping.pause)

    def chat_session(self) -> list[DemoStep]:
        """Play the scripted game session through the store worker's HTTP API."""
        from goaicore.devstack.demo import run_session, wait_ready

        url = self.started().http_url
        if url is None:
            raise RuntimeError("the dev stack runs no store worker with an HTTP port")
        wait_ready(url, pause=self.stopping.pause)
        tokens = self.settings.http_tokens
        return run_session(url, token=tokens[0] if tokens else None)

    def started(self) -> StackInfo:
        """What the started stack runs; a RuntimeError before ``start()``."""
        if self.info is None:
            raise RuntimeError("start() the dev stack first")
        return self.info

    def check_projection(self, folded: FoldCheck, timeout: float = 60.0) -> ProjectionCheck:
        """Wait until the projector has written the folded check event to PostgreSQL."""
        return projection_round_trip(
            self.settings, folded, timeout, self.projector, self.stopping.pause
        )

    def check_console(self, folded: FoldCheck, timeout: float = 60.0) -> ConsoleCheck:
        """Wait until the console shows the folded check event's conversation."""
        url = self.started().console_url
        if url is None or self.console is None:
            raise RuntimeError("the dev stack runs no console")
        tokens = self.settings.http_tokens
        token = tokens[0] if tokens else None
        return console_round_trip(url, folded, timeout, self.console, token, self.stopping.pause)

    def stop(self) -> None:
        """Remove dev.json (if ours) and stop what this stack started, nothing else."""
        info = read_dev_file(self.settings.data_dir)
        if info is not None and info.get("pid") == os.getpid():
            self.dev_file.unlink(missing_ok=True)
        self.published = False
        if self.console is not None:
            self.console.stop()
            self.console = None
        if self.projector is not None:
            self.projector.stop()
            self.projector = None
        if self.worker is not None:
            self.worker.stop()
            self.worker = None
        if self.database is not None:
            self.database.stop()
            self.database = None
        if self.broker is not None:
            self.broker.stop()
            self.broker = None
        if self._lock is not None:
            os.close(self._lock)  # lets go of the data dir
            self._lock = None

    def __enter__(self) -> LocalStack:
        self.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.stop()


def _dev_file_left_behind(path: Path) -> dict[str, Any]:
    """What a dev.json holds, live or not (a stack that was killed leaves its own)."""
    try:
        info = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    return info if isinstance(info, dict) else {}


@dataclass(frozen=True)
class SchemaChoice:
    """The schema the dev stack projects into, and the schemas earlier logs' rows stay in."""

    schema: str
    configured: str
    earlier: tuple[str, ...]
    resumed: bool = False
    """True when the schema already followed this log: the broker kept it since a run before."""

    @property
    def moved(self) -> bool:
        """True when the configured schema holds another log's rows, so this log went elsewhere."""
        return self.schema != self.configured

    def note(self, broker: LocalBroker, prefix: str) -> str | None:
        """What the banner says of the schemas, naming what happened to this broker's log."""
        if not self.earlier:
            return None
        if self.resumed:
            where = f" in {broker.folder}" if broker.folder else ""
            happened = f"{broker.name} kept its log{where}: its projection goes on in schema"
        elif broker.kind == "embedded":
            happened = (
                "the broker holds a new log (the embedded broker keeps nothing between runs): "
                "projecting into schema"
            )
        elif broker.new_storage:
            happened = (
                f"the broker holds a new log ({broker.folder} was new): projecting into schema"
            )
        else:
            happened = "no schema followed this broker's log yet: projecting into schema"
        earlier = ", ".join(self.earlier)
        return (
            f"{happened} {self.schema}; earlier logs' rows stay untouched in schema(s) {earlier} "
            f"(`goaicore console --schema SCHEMA --port PORT` shows one, "
            f"`goaicore projection clear --schema SCHEMA --prefix {prefix}` removes one)"
        )


def choose_schema(url: str, configured: str, given: bool, log_id: str, prefix: str) -> SchemaChoice:
    """The schema for the projection of ``log_id``: one empty or following this log.

    The configured schema when it is empty or already follows this log; else, unless
    the schema was set explicitly (GOAICORE_DB_SCHEMA), one named after the log. A
    schema holding another log's rows is never cleared: an explicit one is an error.
    """
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(
            f"CREATE TABLE IF NOT EXISTS {PROJECTED_LOG_TABLE} ("
            "projection_schema text PRIMARY KEY, log_id text NOT NULL, "
            "since timestamptz NOT NULL DEFAULT now())"
        )
        rows = conn.execute(f"SELECT projection_schema, log_id FROM {PROJECTED_LOG_TABLE}")
        followed: dict[str, str] = {str(schema): str(log) for schema, log in rows}
        digest = hashlib.sha1(log_id.encode()).hexdigest()[:8]
        candidates = [configured] if given else [configured, f"{configured[:50]}_log_{digest}"]
        for schema in candidates:
            if followed.get(schema) == log_id or not _holds_rows(conn, schema):
                conn.execute(
                    f"INSERT INTO {PROJECTED_LOG_TABLE} (projection_schema, log_id) "
                    "VALUES (%s, %s) ON CONFLICT (projection_schema) DO UPDATE SET "
                    "log_id = excluded.log_id, since = now()",
                    (schema, log_id),
                )
                earlier = tuple(
                    sorted(s for s, log in followed.items() if log != log_id and s != schema)
                )
                return SchemaChoice(schema, configured, earlier, followed.get(schema) == log_id)
    raise ConfigError(
        f"GOAICORE_DB_SCHEMA={configured} holds the projection of another log "
        f"({followed.get(configured, 'not this broker')}); nothing was cleared. Choose another "
        f"schema, or clear it: goaicore projection clear --schema {configured} --prefix {prefix}"
    )


def _holds_rows(conn: Any, schema: str) -> bool:
    """True when ``schema`` has projected anything (a position past the start)."""
    from psycopg import sql

    exists = conn.execute(
        "SELECT 1 FROM pg_tables WHERE schemaname = %s AND tablename = 'projector_positions'",
        (schema,),
    ).fetchone()
    if exists is None:
        return False
    row = conn.execute(
        sql.SQL("SELECT 1 FROM {} WHERE next_offset > 0 LIMIT 1").format(
            sql.Identifier(schema, "projector_positions")
        )
    ).fetchone()
    return row is not None


@dataclass(frozen=True)
class FoldCheck:
    """One event through the store worker: published, folded, read back as a snapshot."""

    conversation_id: str
    offset: int
    messages: int
    seconds: float


def fold_round_trip(
    settings: Settings,
    timeout: float,
    worker: WorkerProcess | None = None,
    pause: Pause = time.sleep,
) -> FoldCheck:
    """Publish a game event to the check conversation and wait for its snapshot (through
    ``intake`` when the stack seals: the snapshot then names the event, not its offset)."""
    from goaicore.clients import EventPublisher
    from goaicore.clients.snapshots import SnapshotReader
    from goaicore.records import new_event
    from goaicore.store.inputs import game_event_body

    started = time.perf_counter()
    conversation = "stack-check"
    body = game_event_body("The local stack started", "stack-check", None)
    event = new_event(conversation, body, source="goaicore dev")
    with EventPublisher(settings, source="goaicore dev") as publisher:
        publisher.publish(conversation, event)
    deadline = time.monotonic() + timeout
    with SnapshotReader(settings) as reader:
        while time.monotonic() < deadline:
            if worker is not None and not worker.alive():
                raise StackError(f"the store worker stopped; see {worker.log_path}")
            snapshot = reader.get(conversation)
            last = snapshot.last_position if snapshot else None
            if snapshot and last and event.event_id in snapshot.recent_event_ids:
                return FoldCheck(
                    conversation, last.offset, len(snapshot.messages), time.perf_counter() - started
                )
            pause(0.25)
    raise StackError(f"the store worker did not fold the check event in {timeout:.0f} s")


@dataclass(frozen=True)
class ProjectionCheck:
    """The check event, read back from PostgreSQL as the projector wrote it."""

    table: str
    offset: int
    seconds: float


def projection_round_trip(
    settings: Settings,
    folded: FoldCheck,
    timeout: float,
    projector: ProjectorProcess | None,
    pause: Pause = time.sleep,
) -> ProjectionCheck:
    """Wait for the check event's row in ``conversation_events``."""
    import psycopg

    from goaicore.projection.db import connect

    started = time.perf_counter()
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if projector is not None and not projector.alive():
            raise StackError(f"the projector stopped; see {projector.log_path}")
        try:
            with connect(settings) as conn:
                row = conn.execute(
                    "SELECT log_offset FROM conversation_events"
                    " WHERE conversation_id = %s AND log_offset = %s",
                    (folded.conversation_id, folded.offset),
                ).fetchone()
        except psycopg.errors.UndefinedTable:
            row = None  # the projector has not created its tables yet
        if row is not None:
            return ProjectionCheck(
                "conversation_events", int(row[0]), time.perf_counter() - started
            )
        pause(0.25)
    raise StackError(f"the projector did not write the check event in {timeout:.0f} s")


@dataclass(frozen=True)
class ConsoleCheck:
    """The check event's conversation, as the console's page shows it."""

    url: str
    seconds: float


def console_round_trip(
    base_url: str,
    folded: FoldCheck,
    timeout: float,
    console: ConsoleProcess,
    token: str | None,
    pause: Pause = time.sleep,
) -> ConsoleCheck:
    """Fetch the conversation's page until it names the check event's position."""
    import urllib.error
    import urllib.request
    from urllib.parse import quote

    url = f"{base_url}/conversations/{quote(folded.conversation_id, safe='')}"
    headers = {"Accept": "text/html"}
    if token is not None:
        headers["Authorization"] = f"Bearer {token}"
    started = time.perf_counter()
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not console.alive():
            raise StackError(f"the console stopped; see {console.log_path}")
        try:
            request = urllib.request.Request(url, headers=headers)
            with urllib.request.urlopen(request, timeout=10) as response:
                if f":{folded.offset}</span>" in response.read().decode():
                    return ConsoleCheck(url, time.perf_counter() - started)
        except OSError:  # not listening yet, or a 404 before the projector wrote the row
            pass
        pause(0.25)
    raise StackError(f"the console did not show {url} in {timeout:.0f} s")


def check_stack(settings: Settings, pause: Pause = time.sleep) -> StackCheck:
    """Send one record through the broker and one row through PostgreSQL."""
    return StackCheck(*record_round_trip(settings, pause), *row_round_trip(settings))


def record_round_trip(settings: Settings, pause: Pause = time.sleep) -> tuple[str, int, int, float]:
    """Produce one record to the check topic and consume it back (``pause(0)`` between
    the polls: a ``Stopping.pause`` ends the wait on a stop)."""
    from kafka import TopicPartition
    from kafka.admin import NewTopic
    from kafka.errors import TopicAlreadyExistsError

    from goaicore.kafka.connection import make_admin, make_consumer, make_producer

    topic = settings.topic(CHECK_TOPIC)
    admin = make_admin(settings)
    try:
        admin.create_topics([NewTopic(topic, 1, 1 if settings.embedded_broker else -1)])
    except TopicAlreadyExistsError:
        pass
    finally:
        admin.close()
    started = time.perf_counter()
    producer = make_producer(settings)
    token = uuid.uuid4().hex.encode()
    try:
        sent = producer.send(topic, key=b"stack-check", value=token).get(timeout=10)
    finally:
        producer.close()
    consumer = make_consumer(settings)
    try:
        partition = TopicPartition(topic, sent.partition)
        consumer.assign([partition])
        consumer.seek(partition, sent.offset)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            for record in consumer.poll(timeout_ms=500).get(partition, []):
                if record.value == token:
                    elapsed = (time.perf_counter() - started) * 1000
                    return topic, sent.partition, sent.offset, elapsed
            pause(0)
    finally:
        consumer.close()
    raise RuntimeError(f"the check record sent to {topic} did not come back in 10 s")


def row_round_trip(settings: Settings) -> tuple[str, int, float]:
    """Write one row to PostgreSQL and read it back."""
    import psycopg

    started = time.perf_counter()
    table = "goaicore_stack_check"
    with psycopg.connect(settings.require_database_url()) as conn:
        conn.execute(
            f"CREATE TABLE IF NOT EXISTS {table} ("
            "id bigserial PRIMARY KEY, checked_at timestamptz NOT NULL DEFAULT now(), "
            "pid integer NOT NULL)"
        )
        row = conn.execute(
            f"INSERT INTO {table} (pid) VALUES (%s) RETURNING id", (os.getpid(),)
        ).fetchone()
        if row is None:
            raise RuntimeError(f"no id came back from the check row written to {table}")
        back = conn.execute(f"SELECT id FROM {table} WHERE id = %s", (row[0],)).fetchone()
    if back is None:
        raise RuntimeError(f"the check row written to {table} could not be read back")
    return table, int(back[0]), (time.perf_counter() - started) * 1000


def ensure_local_master_keys(data_dir: Path) -> str:
    """The dev stack's master keys: read from its data folder, or made there once.

    Kept across restarts like the stack's data (a new key would leave everything sealed
    before unreadable); readable by its owner only. Other commands run against the
    stack find it there too.
    """
    existing = read_local_master_keys(data_dir)
    if existing is not None:
        return existing
    from goaicore.sealing.keys import MasterKeys

    path = local_master_keys_file(data_dir)
    text = MasterKeys.generate("dev").to_text()
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(descriptor, "w") as out:
        out.write(text + "\n")
    return text
