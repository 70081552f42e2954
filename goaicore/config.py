"""Settings read from environment variables, with the running dev stack as fallback.

``Settings()`` with no arguments reads the environment; where Kafka or
PostgreSQL are not configured there, it uses the endpoints the running
``goaicore dev`` stack wrote to ``<data dir>/dev.json``. Keyword arguments
override both. A bad value raises :class:`ConfigError` with one line naming the
variable and what is wrong, so the CLI can stop with exactly that line.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any, Literal
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from goaicore.errors import ConfigError

BrokerProfile = Literal["standard", "embedded"]
LocalBrokerKind = Literal["embedded", "kafka"]
TableStore = Literal["memory", "rocksdb"]
LogFormat = Literal["plain", "json"]
SecurityProtocol = Literal["PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"]
SaslMechanism = Literal["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"]
SECURITY_PROTOCOLS: tuple[SecurityProtocol, ...] = (
    "PLAINTEXT",
    "SSL",
    "SASL_PLAINTEXT",
    "SASL_SSL",
)
SASL_MECHANISMS: tuple[SaslMechanism, ...] = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")

DEV_FILE_NAME = "dev.json"
LOCAL_MASTER_KEYS_FILE = "master-keys"
_TOPIC_PREFIX_RE = re.compile(r"^[A-Za-z0-9._-]{1,200}$")
_HOST_PORT_RE = re.compile(r"^(\[[0-9A-Fa-f:]+\]|[A-Za-z0-9._-]+):(\d{1,5})$")
_DB_SCHEMA_RE = re.compile(r"^[a-z_][a-z0-9_]{0,62}$")


@dataclass(frozen=True)
class Variable:
    """One documented environment variable (the README's configuration table)."""

    name: str
    default: str
    meaning: str


VARIABLES: tuple[Variable, ...] = (
    Variable(
        "KAFKA_BOOTSTRAP_SERVERS",
        "the dev stack's local broker",
        "Kafka bootstrap servers, `host:port[,host:port...]`.",
    ),
    Variable(
        "GOAICORE_BROKER_PROFILE",
        "`standard` (`embedded` for the dev stack's embedded broker)",
        "`embedded` applies the client settings that work around the embedded "
        "broker's gaps (see the README); never use it against Apache Kafka.",
    ),
    Variable(
        "GOAICORE_LOCAL_BROKER",
        "`embedded`",
        "Broker `goaicore dev` starts when `KAFKA_BOOTSTRAP_SERVERS` is unset: `embedded` "
        "(tansu, memory only, starts at once) or `kafka` (Apache Kafka, one KRaft node whose "
        "data is kept in `<GOAICORE_DATA_DIR>/kafka/`; needs Java 17+, and Maven once).",
    ),
    Variable("GOAICORE_TOPIC_PREFIX", "`goaicore`", "Prefix of every topic name."),
    Variable("GOAICORE_PARTITIONS", "`6`", "Partitions of every topic (1 to 10000)."),
    Variable(
        "GOAICORE_REPLICATION_FACTOR",
        "`-1` (the broker's default)",
        "Replication factor of the topics goaicore creates.",
    ),
    Variable(
        "KAFKA_SECURITY_PROTOCOL",
        "`PLAINTEXT`",
        "How every client connects to `KAFKA_BOOTSTRAP_SERVERS`: `PLAINTEXT`, `SSL`, "
        "`SASL_PLAINTEXT` or `SASL_SSL` (see Secure connections).",
    ),
    Variable(
        "KAFKA_SASL_MECHANISM",
        "`PLAIN`",
        "SASL mechanism: `PLAIN`, `SCRAM-SHA-256` or `SCRAM-SHA-512`.",
    ),
    Variable(
        "KAFKA_SASL_USERNAME",
        "unset",
        "SASL user name; required with `SASL_PLAINTEXT` and `SASL_SSL`.",
    ),
    Variable(
        "KAFKA_SASL_PASSWORD",
        "unset",
        "SASL password; required with `SASL_PLAINTEXT` and `SASL_SSL`; never shown or logged.",
    ),
    Variable(
        "KAFKA_SSL_CAFILE",
        "the system's CA certificates",
        "PEM file of the CA certificates that sign the brokers' certificates (`SSL`, `SASL_SSL`).",
    ),
    Variable(
        "KAFKA_SSL_CERTFILE",
        "unset",
        "PEM file of the client certificate (and its chain), for brokers that require "
        "client authentication; it may hold the private key too.",
    ),
    Variable(
        "KAFKA_SSL_KEYFILE",
        "the key in `KAFKA_SSL_CERTFILE`",
        "PEM file of the client certificate's private key.",
    ),
    Variable(
        "KAFKA_SSL_KEY_PASSWORD",
        "unset",
        "Password of an encrypted client private key; never shown or logged.",
    ),
    Variable(
        "DATABASE_URL",
        "127.0.0.1:5432 if it answers, else an embedded PostgreSQL",
        "PostgreSQL URL, `postgresql://user@host:port/db`.",
    ),
    Variable(
        "GOAICORE_DB_SCHEMA",
        "`public`",
        "PostgreSQL schema of the projection (tables of one topic prefix); created if missing.",
    ),
    Variable(
        "GOAICORE_MAX_RECORD_BYTES",
        "`900000`",
        "Largest record any client or worker sends (at least 65536); "
        "every snapshot is folded to fit 16 KiB under it.",
    ),
    Variable("OPENAI_API_KEY", "unset", "Key for an OpenAI-compatible server."),
    Variable("OPENAI_BASE_URL", "the SDK's default", "Base URL of an OpenAI-compatible server."),
    Variable("GOAICORE_MODEL", "the provider's default", "Model name sent to the provider."),
    Variable("ANTHROPIC_API_KEY", "unset", "Key for Anthropic (used when no OpenAI key is set)."),
    Variable(
        "GOAICORE_CHAT_CONCURRENCY",
        "`32`",
        "Chat requests one store worker runs at once; a conversation's requests always run "
        "one at a time, in arrival order.",
    ),
    Variable(
        "GOAICORE_READ_WAIT",
        "`10`",
        "Seconds a chat request waits for its conversation's earlier events to be folded "
        "before it runs anyway, with a logged warning.",
    ),
    Variable(
        "GOAICORE_TURN_TIMEOUT",
        "`120`",
        "Seconds one chat turn (LLM and tool calls) may take; then its reply is a timeout.",
    ),
    Variable(
        "GOAICORE_SYSTEM_PROMPT",
        "a short game-assistant prompt",
        "System prompt of chat requests that bring none (never stored in the log).",
    ),
    Variable(
        "GOAICORE_TOOLS",
        "the game demo's tools",
        "Tools the chat worker offers, as `package.module:attribute` (a list or dict of tools).",
    ),
    Variable(
        "GOAICORE_CONTEXT_TOKENS",
        "`16000`",
        "Estimated request size above which the chat worker compacts a conversation's history.",
    ),
    Variable(
        "GOAICORE_LOG_FORMAT",
        "`plain`",
        "`json` makes the worker, the projector and the CLI log one JSON object per line, "
        "with conversation_id, request_id, event_id, topic, partition and offset as fields.",
    ),
    Variable(
        "GOAICORE_PRICES",
        "the `genai-prices` data shipped with the package",
        "JSON file of LLM prices (USD per million tokens, by provider and model) that "
        'overrides the shipped ones; see docs/operations.md, "Cost".',
    ),
    Variable(
        "GOAICORE_HTTP_TOKENS",
        "unset: no authentication",
        "Bearer tokens the worker's HTTP API accepts, comma-separated; never shown or logged. "
        "`/health` and `/ready` stay open. Unset, a worker binds loopback only unless "
        "started with `--insecure-http`.",
    ),
    Variable(
        "GOAICORE_HTTP_TOKENS_FILE",
        "unset",
        "A file of more bearer tokens, one per line (or comma-separated): a mounted secret.",
    ),
    Variable(
        "GOAICORE_MASTER_KEYS",
        "unset: content is written in the clear",
        "Master keys that wrap each conversation's data key, `id:base64` (32 bytes each), "
        "comma-separated, the current one first; never shown or logged. Set, the worker "
        "seals what it writes to `events` and erasure can make content unreadable. See "
        'docs/operations.md, "Erasure".',
    ),
    Variable(
        "GOAICORE_INTAKE",
        "`on` when GOAICORE_MASTER_KEYS is set, else `off`",
        "`on`: publishers (EventPublisher, `goaicore publish-event`, history operations) "
        "write to `intake`, and the worker that owns the conversation seals each event into "
        "`events`; set it on every service that publishes to a deployment whose workers "
        "seal (they need no master key). `off`: they write to `events` directly.",
    ),
    Variable(
        "GOAICORE_ERASURE_WINDOW",
        "`604800` (7 days)",
        "Seconds content may stay readable after an erasure: the retention of `requests`, "
        "`replies` and `dead-letters`, and how long compaction may wait on `snapshots`, "
        "`keys` and the replies table. Applied when topics are created.",
    ),
    Variable(
        "GOAICORE_TABLE_STORE",
        "`memory`",
        "Where a store worker keeps its snapshots table: `memory` (rebuilt from the "
        "changelog at each start) or `rocksdb` (on disk under `GOAICORE_DATA_DIR`, kept "
        "across restarts; needs the `rocksdb` extra). See docs/operations.md, "
        '"The snapshots table".',
    ),
    Variable(
        "GOAICORE_DATA_DIR",
        "the nearest `.goaicore/` here or above",
        "Where the dev stack keeps dev.json, the embedded PostgreSQL data and the local "
        "Apache Kafka's data; commands run anywhere inside a checkout find its stack.",
    ),
    Variable(
        "GOAICORE_SCHEMAS_DIR",
        "the package's own",
        "Folder of the Avro schemas, to read with another copy than the one installed "
        "with the package.",
    ),
    Variable(
        "GOAICORE_KAFKA_CACHE",
        "`$XDG_CACHE_HOME/goaicore` (else `~/.cache/goaicore`)",
        "Where the local Apache Kafka's jars are kept, one folder per version, fetched once.",
    ),
    Variable(
        "GOAICORE_KAFKA_FETCH_TIMEOUT",
        "`600`",
        "Seconds the one-time Maven fetch of the Apache Kafka jars may take before it stops "
        "with an error.",
    ),
)

DEFAULT_SYSTEM_PROMPT = (
    "You are the assistant of a game. Context messages tell you what happened in the "
    "game; use the tools for facts you do not have. Answer briefly."
)

# Read where they are used, not by Settings: the schemas when they are loaded, the
# Apache Kafka jars when a local Apache Kafka starts (goaicore.kafka.apache.jars).
LOADER_VARIABLES = frozenset(
    {"GOAICORE_SCHEMAS_DIR", "GOAICORE_KAFKA_CACHE", "GOAICORE_KAFKA_FETCH_TIMEOUT"}
)


def _env(env: Mapping[str, str], name: str) -> str | None:
    value = env.get(name)
    if value is None:
        return None
    value = value.strip()
    return value or None


def _parse_int(name: str, raw: str, low: int, high: int) -> int:
    try:
        value = int(raw)
    except ValueError:
        raise ConfigError(f"{name}={raw!r}: must be a whole number") from None
    if not low <= value <= high:
        raise ConfigError(f"{name}={raw!r}: must be from {low} to {high}")
    return value


def parse_bootstrap_servers(name: str, raw: str) -> str:
    """Check ``host:port[,host:port...]`` and return it without spaces."""
    parts = [p.strip() for p in raw.split(",")]
    for part in parts:
        match = _HOST_PORT_RE.match(part)
        if match is None or not 1 <= int(match.group(2)) <= 65535:
            raise ConfigError(f"{name}={raw!r}: expected host:port[,host:port...], got {part!r}")
    return ",".join(parts)


def _parse_database_url(name: str, raw: str) -> str:
    if not raw.startswith(("postgresql://", "postgres://")):
        raise ConfigError(f"{name}={raw!r}: must start with postgresql:// or postgres://")
    return raw


def _parse_db_schema(name: str, raw: str) -> str:
    if not _DB_SCHEMA_RE.match(raw):
        raise ConfigError(f"{name}={raw!r}: use 1 to 63 of a-z 0-9 _, not starting with a digit")
    return raw


def _parse_http_url(name: str, raw: str) -> str:
    if not re.match(r"^https?://[^/\s]+", raw):
        raise ConfigError(f"{name}={raw!r}: must be an http:// or https:// URL")
    return raw


def _parse_seconds(name: str, raw: str, low: float, high: float) -> float:
    try:
        value = float(raw)
    except ValueError:
        raise ConfigError(f"{name}={raw!r}: must be a number of seconds") from None
    if not low <= value <= high:
        raise ConfigError(f"{name}={raw!r}: must be from {low:g} to {high:g}")
    return value


def _parse_import_path(name: str, raw: str) -> str:
    if not re.match(r"^[A-Za-z_][\w.]*:[A-Za-z_]\w*$", raw):
        raise ConfigError(f"{name}={raw!r}: expected package.module:attribute")
    return raw


def _parse_topic_prefix(name: str, raw: str) -> str:
    if not _TOPIC_PREFIX_RE.match(raw):
        raise ConfigError(
            f"{name}={raw!r}: use 1 to 200 of the characters A-Z a-z 0-9 . _ - (Kafka topic names)"
        )
    return raw


def _one_of(*choices: str) -> Callable[[str, str], str]:
    """A parser of a variable that takes exactly one of ``choices``."""
    listed = " or ".join(repr(choice) for choice in choices)

    def parse(name: str, raw: str) -> str:
        if raw in choices:
            return raw
        raise ConfigError(f"{name}={raw!r}: must be {listed}")

    return parse


_parse_profile = _one_of("standard", "embedded")
_parse_table_store = _one_of("memory", "rocksdb")
_parse_local_broker = _one_of("embedded", "kafka")
_parse_log_format = _one_of("plain", "json")


def _parse_file(name: str, raw: str) -> Path:
    path = Path(raw).expanduser()
    if not path.is_file():
        raise ConfigError(f"{name}={raw!r}: no such file")
    return path


def _parse_data_dir(name: str, raw: str) -> Path:
    path = Path(raw).expanduser()
    if path.exists() and not path.is_dir():
        raise ConfigError(f"{name}={raw!r}: exists and is not a directory")
    return path


DATA_DIR_NAME = ".goaicore"


def find_data_dir(start: Path) -> Path:
    """The nearest ``.goaicore`` folder in ``start`` or a folder above it, like git's ``.git``.

    So a command run anywhere inside a checkout finds the stack ``make run`` started
    at its root; with none found, ``.goaicore`` here (where a new stack would keep it).
    """
    for folder in (start, *start.parents):
        candidate = folder / DATA_DIR_NAME
        if candidate.is_dir():
            return candidate if folder != start else Path(DATA_DIR_NAME)
    return Path(DATA_DIR_NAME)


def read_dev_file(data_dir: Path) -> dict[str, Any] | None:
    """The running dev stack's endpoints, or None when no live stack wrote them."""
    path = data_dir / DEV_FILE_NAME
    try:
        info = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(info, dict) or not _pid_alive(info.get("pid")):
        return None
    return info


def _pid_alive(pid: object) -> bool:
    if not isinstance(pid, int) or pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


FROM_ENVIRONMENT: Any = None
"""The default of a field that always has a value: read from the environment, else its default."""


@dataclass(frozen=True, kw_only=True)
class Settings:
    """Where goaicore finds Kafka, PostgreSQL and an LLM, and how topics are laid out.

    Fields left out are read from the environment (see :data:`VARIABLES`), else take
    their defaults, so every field typed without ``None`` has a value once built;
    ``bootstrap_servers`` and ``database_url`` fall back to the running dev stack and
    may stay unset (``require_bootstrap`` says why).
    """

    bootstrap_servers: str | None = None
    broker_profile: BrokerProfile = FROM_ENVIRONMENT
    local_broker: LocalBrokerKind = FROM_ENVIRONMENT
    security_protocol: SecurityProtocol | None = None
    sasl_mechanism: SaslMechanism | None = None
    sasl_username: str | None = None
    sasl_password: str | None = field(default=None, repr=False)
    ssl_cafile: str | None = None
    ssl_certfile: str | None = None
    ssl_keyfile: str | None = None
    ssl_key_password: str | None = field(default=None, repr=False)
    topic_prefix: str = FROM_ENVIRONMENT
    partitions: int = FROM_ENVIRONMENT
    replication_factor: int = FROM_ENVIRONMENT
    database_url: str | None = None
    db_schema: str = FROM_ENVIRONMENT
    max_record_bytes: int = FROM_ENVIRONMENT
    openai_api_key: str | None = field(default=None, repr=False)
    openai_base_url: str | None = None
    model: str | None = None
    anthropic_api_key: str | None = field(default=None, repr=False)
    chat_concurrency: int = FROM_ENVIRONMENT
    read_wait: float = FROM_ENVIRONMENT
    turn_timeout: float = FROM_ENVIRONMENT
    system_prompt: str = FROM_ENVIRONMENT
    tools: str | None = None
    """GOAICORE_TOOLS; None: the worker offers its own tools."""
    context_tokens: int = FROM_ENVIRONMENT
    table_store: TableStore = FROM_ENVIRONMENT
    prices: Path | None = None
    log_format: LogFormat = FROM_ENVIRONMENT
    http_tokens: tuple[str, ...] = field(default=FROM_ENVIRONMENT, repr=False)
    master_keys: str | None = field(default=None, repr=False)
    intake_override: bool | None = None
    """GOAICORE_INTAKE; None: :attr:`intake` follows the master keys."""
    erasure_window: float = FROM_ENVIRONMENT
    data_dir: Path = FROM_ENVIRONMENT
    env: Mapping[str, str] | None = field(default=None, repr=False, compare=False)

    def __repr__(self) -> str:
        """Every shown field, with the password of a database URL masked; API keys and
        Kafka passwords are not shown at all."""
        shown = []
        for item in fields(self):
            if not item.repr:
                continue
            value = getattr(self, item.name)
            if item.name == "database_url" and value is not None:
                value = mask_password(value)
            shown.append(f"{item.name}={value!r}")
        return f"Settings({', '.join(shown)})"

    def __post_init__(self) -> None:
        env = os.environ if self.env is None else self.env
        resolved = _resolve(self, env)
        for name, value in resolved.items():
            object.__setattr__(self, name, value)
        object.__setattr__(self, "env", None)

    @property
    def intake(self) -> bool:
        """Whether publishers write to ``intake`` for the workers to seal: GOAICORE_INTAKE,
        else on wherever master keys are set (so also after ``with_overrides``)."""
        if self.intake_override is not None:
            return self.intake_override
        return self.master_keys is not None

    @property
    def embedded_broker(self) -> bool:
        """True when the embedded broker profile applies (see ``goaicore.kafka.profile``)."""
        return self.broker_profile == "embedded"

    def require_bootstrap(self) -> str:
        """The bootstrap servers, or a clear error when neither env nor dev stack has one."""
        if self.bootstrap_servers is None:
            raise ConfigError(
                f"KAFKA_BOOTSTRAP_SERVERS is not set and {self._no_stack()}; set it, or start "
                "the dev stack with `make run`"
            )
        return self.bootstrap_servers

    def require_database_url(self) -> str:
        if self.database_url is None:
            raise ConfigError(
                f"DATABASE_URL is not set and {self._no_stack()}; set it, or start the dev "
                "stack with `make run`"
            )
        return self.database_url

    def _no_stack(self) -> str:
        """Where a running dev stack was looked for, for a message saying none was found."""
        dev_file = (self.data_dir / DEV_FILE_NAME).resolve()
        if dev_file.exists():
            return f"the dev stack of {dev_file} is not running"
        return (
            f"no dev stack runs here: looked for {dev_file} (a .goaicore folder in the current "
            "folder or one above it, or GOAICORE_DATA_DIR)"
        )

    def topic(self, name: str) -> str:
        """The full name of one of goaicore's topics under the configured prefix."""
        return f"{self.topic_prefix}.{name}"

    def with_overrides(self, **changes: Any) -> Settings:
        return replace(self, **changes)

    def environment(self) -> dict[str, str]:
        """The variables that give these settings back in another process.

        Where Kafka, PostgreSQL and the data are, always; every other setting when it
        differs from its default. Secrets are included: this is for child processes,
        never for display (``repr`` is).
        """
        defaults = Settings(env={}, data_dir=self.data_dir)
        out: dict[str, str] = {}
        for name, variable in FIELD_VARIABLES.items():
            value = getattr(self, name)
            if value is None or value == ():
                continue
            if name not in ALWAYS_PASSED and value == getattr(defaults, name):
                continue
            out[variable] = ",".join(value) if isinstance(value, tuple) else str(value)
        return out


# Each setting's variable (Settings.environment), and the settings a child process is
# always given: where the broker, the database and the data are, and the topic layout.
FIELD_VARIABLES: Mapping[str, str] = {
    "bootstrap_servers": "KAFKA_BOOTSTRAP_SERVERS",
    "broker_profile": "GOAICORE_BROKER_PROFILE",
    "local_broker": "GOAICORE_LOCAL_BROKER",
    "security_protocol": "KAFKA_SECURITY_PROTOCOL",
    "sasl_mechanism": "KAFKA_SASL_MECHANISM",
    "sasl_username": "KAFKA_SASL_USERNAME",
    "sasl_password": "KAFKA_SASL_PASSWORD",
    "ssl_cafile": "KAFKA_SSL_CAFILE",
    "ssl_certfile": "KAFKA_SSL_CERTFILE",
    "ssl_keyfile": "KAFKA_SSL_KEYFILE",
    "ssl_key_password": "KAFKA_SSL_KEY_PASSWORD",
    "topic_prefix": "GOAICORE_TOPIC_PREFIX",
    "partitions": "GOAICORE_PARTITIONS",
    "replication_factor": "GOAICORE_REPLICATION_FACTOR",
    "database_url": "DATABASE_URL",
    "db_schema": "GOAICORE_DB_SCHEMA",
    "max_record_bytes": "GOAICORE_MAX_RECORD_BYTES",
    "openai_api_key": "OPENAI_API_KEY",
    "openai_base_url": "OPENAI_BASE_URL",
    "model": "GOAICORE_MODEL",
    "anthropic_api_key": "ANTHROPIC_API_KEY",
    "chat_concurrency": "GOAICORE_CHAT_CONCURRENCY",
    "read_wait": "GOAICORE_READ_WAIT",
    "turn_timeout": "GOAICORE_TURN_TIMEOUT",
    "system_prompt": "GOAICORE_SYSTEM_PROMPT",
    "tools": "GOAICORE_TOOLS",
    "context_tokens": "GOAICORE_CONTEXT_TOKENS",
    "table_store": "GOAICORE_TABLE_STORE",
    "prices": "GOAICORE_PRICES",
    "log_format": "GOAICORE_LOG_FORMAT",
    "http_tokens": "GOAICORE_HTTP_TOKENS",
    "master_keys": "GOAICORE_MASTER_KEYS",
    "intake_override": "GOAICORE_INTAKE",
    "erasure_window": "GOAICORE_ERASURE_WINDOW",
    "data_dir": "GOAICORE_DATA_DIR",
}
ALWAYS_PASSED = frozenset(
    {
        "bootstrap_servers",
        "broker_profile",
        "security_protocol",
        "topic_prefix",
        "partitions",
        "database_url",
        "table_store",
        "data_dir",
    }
)


def _resolve(given: Settings, env: Mapping[str, str]) -> dict[str, Any]:
    """Fill every field left as None from the environment, then from dev.json."""
    out: dict[str, Any] = {}

    def pick(field_name: str, var: str, parse: Any, default: Any = None) -> Any:
        explicit = getattr(given, field_name)
        if explicit is not None:
            return explicit
        raw = _env(env, var)
        return parse(var, raw) if raw is not None else default

    out["data_dir"] = pick("data_dir", "GOAICORE_DATA_DIR", _parse_data_dir)
    if out["data_dir"] is None:
        out["data_dir"] = find_data_dir(Path.cwd())
    out["topic_prefix"] = pick(
        "topic_prefix", "GOAICORE_TOPIC_PREFIX", _parse_topic_prefix, "goaicore"
    )
    out["partitions"] = pick(
        "partitions", "GOAICORE_PARTITIONS", lambda n, r: _parse_int(n, r, 1, 10000), 6
    )
    out["replication_factor"] = pick(
        "replication_factor",
        "GOAICORE_REPLICATION_FACTOR",
        lambda n, r: _parse_int(n, r, -1, 32),
        -1,
    )
    if out["replication_factor"] == 0:
        raise ConfigError("GOAICORE_REPLICATION_FACTOR='0': must be -1 or from 1 to 32")
    out["max_record_bytes"] = pick(
        "max_record_bytes",
        "GOAICORE_MAX_RECORD_BYTES",
        lambda n, r: _parse_int(n, r, 65_536, 100_000_000),
        900_000,
    )
    out["openai_api_key"] = pick("openai_api_key", "OPENAI_API_KEY", lambda n, r: r)
    out["openai_base_url"] = pick("openai_base_url", "OPENAI_BASE_URL", _parse_http_url)
    out["model"] = pick("model", "GOAICORE_MODEL", lambda n, r: r)
    out["anthropic_api_key"] = pick("anthropic_api_key", "ANTHROPIC_API_KEY", lambda n, r: r)
    out["chat_concurrency"] = pick(
        "chat_concurrency",
        "GOAICORE_CHAT_CONCURRENCY",
        lambda n, r: _parse_int(n, r, 1, 10000),
        32,
    )
    out["read_wait"] = pick(
        "read_wait", "GOAICORE_READ_WAIT", lambda n, r: _parse_seconds(n, r, 0, 3600), 10.0
    )
    out["turn_timeout"] = pick(
        "turn_timeout",
        "GOAICORE_TURN_TIMEOUT",
        lambda n, r: _parse_seconds(n, r, 0.001, 86400),
        120.0,
    )
    out["system_prompt"] = pick(
        "system_prompt", "GOAICORE_SYSTEM_PROMPT", lambda n, r: r, DEFAULT_SYSTEM_PROMPT
    )
    out["tools"] = pick("tools", "GOAICORE_TOOLS", _parse_import_path)
    out["context_tokens"] = pick(
        "context_tokens",
        "GOAICORE_CONTEXT_TOKENS",
        lambda n, r: _parse_int(n, r, 256, 10_000_000),
        16_000,
    )
    out["table_store"] = pick("table_store", "GOAICORE_TABLE_STORE", _parse_table_store, "memory")
    out["prices"] = pick("prices", "GOAICORE_PRICES", _parse_file)
    out["log_format"] = pick("log_format", "GOAICORE_LOG_FORMAT", _parse_log_format, "plain")
    out["http_tokens"] = given.http_tokens
    if out["http_tokens"] is None:
        out["http_tokens"] = _http_tokens(env)
    out["master_keys"] = pick("master_keys", "GOAICORE_MASTER_KEYS", _parse_master_keys)
    out["erasure_window"] = pick(
        "erasure_window",
        "GOAICORE_ERASURE_WINDOW",
        lambda n, r: _parse_seconds(n, r, 1, 10 * 365 * 86400),
        7 * 86400.0,
    )
    out["bootstrap_servers"] = pick(
        "bootstrap_servers", "KAFKA_BOOTSTRAP_SERVERS", parse_bootstrap_servers
    )
    out["database_url"] = pick("database_url", "DATABASE_URL", _parse_database_url)
    out["db_schema"] = pick("db_schema", "GOAICORE_DB_SCHEMA", _parse_db_schema)
    profile = pick("broker_profile", "GOAICORE_BROKER_PROFILE", _parse_profile)
    out["local_broker"] = pick(
        "local_broker", "GOAICORE_LOCAL_BROKER", _parse_local_broker, "embedded"
    )

    dev_broker = False
    if out["bootstrap_servers"] is None or out["database_url"] is None:
        dev = read_dev_file(out["data_dir"])
        if dev is not None:
            if out["bootstrap_servers"] is None and isinstance(dev.get("bootstrap_servers"), str):
                out["bootstrap_servers"] = dev["bootstrap_servers"]
                dev_broker = _dev_stack_owns_broker(dev)
                if out["master_keys"] is None:  # the stack's own log: its own key
                    out["master_keys"] = read_local_master_keys(out["data_dir"])
                if profile is None and dev.get("broker_profile") in ("standard", "embedded"):
                    profile = dev["broker_profile"]
            if out["database_url"] is None and isinstance(dev.get("database_url"), str):
                out["database_url"] = dev["database_url"]
                if out["db_schema"] is None and isinstance(dev.get("db_schema"), str):
                    out["db_schema"] = dev["db_schema"]  # the schema the stack projects into
    if out["db_schema"] is None:
        out["db_schema"] = "public"
    out["broker_profile"] = profile or "standard"
    out["intake_override"] = pick("intake_override", "GOAICORE_INTAKE", _parse_switch)
    out.update(_resolve_kafka_security(given, env, dev_broker))
    return out


def _http_tokens(env: Mapping[str, str]) -> tuple[str, ...]:
    """The tokens of GOAICORE_HTTP_TOKENS and of the file GOAICORE_HTTP_TOKENS_FILE names.

    A token is never part of an error message: only the variable and the file are named.
    """
    raw = env.get("GOAICORE_HTTP_TOKENS") or ""
    path = _env(env, "GOAICORE_HTTP_TOKENS_FILE")
    if path is not None:
        try:
            raw += "," + Path(path).expanduser().read_text()
        except (OSError, UnicodeDecodeError) as err:
            reason = getattr(err, "strerror", None) or type(err).__name__
            raise ConfigError(
                f"GOAICORE_HTTP_TOKENS_FILE={path!r}: cannot read it ({reason})"
            ) from None
    tokens = [t.strip() for t in raw.replace("\n", ",").split(",")]
    unique = dict.fromkeys(t for t in tokens if t)
    for token in unique:
        if len(token) < 16 or any(c.isspace() or not c.isprintable() for c in token):
            raise ConfigError(
                "GOAICORE_HTTP_TOKENS (or its file) holds a token shorter than 16 characters "
                "or with spaces or control characters in it; use long random tokens"
            )
    return tuple(unique)


def _parse_switch(name: str, raw: str) -> bool:
    """``on``/``off`` (also true/false, yes/no, 1/0)."""
    value = raw.strip().lower()
    if value in ("on", "true", "yes", "1"):
        return True
    if value in ("off", "false", "no", "0"):
        return False
    raise ConfigError(f"{name}={raw!r}: must be on or off")


def _parse_master_keys(name: str, raw: str) -> str | None:
    """The keys' text, checked now (a bad entry fails at start, not at the first seal);
    the error names the entry, never a key."""
    from goaicore.sealing.keys import MasterKeys

    if not raw.strip():
        return None
    MasterKeys.parse(raw)
    return raw


def local_master_keys_file(data_dir: Path) -> Path:
    """The dev stack's master key, made once and kept with its data (mode 0600)."""
    return data_dir / LOCAL_MASTER_KEYS_FILE


def read_local_master_keys(data_dir: Path) -> str | None:
    """The dev stack's master keys, when it made them."""
    try:
        text = local_master_keys_file(data_dir).read_text().strip()
    except FileNotFoundError:
        return None
    except OSError as err:
        path = local_master_keys_file(data_dir)
        raise ConfigError(f"{path}: cannot read it ({err.strerror})") from None
    return _parse_master_keys(LOCAL_MASTER_KEYS_FILE, text) if text else None


def _dev_stack_owns_broker(dev: Mapping[str, Any]) -> bool:
    """True when dev.json's broker is one the dev stack started (plaintext, on loopback)."""
    kind = dev.get("broker_kind")
    if kind is not None:
        return kind in ("embedded", "kafka")
    return dev.get("broker_embedded") is True


_SASL_VARIABLES = {
    "sasl_mechanism": "KAFKA_SASL_MECHANISM",
    "sasl_username": "KAFKA_SASL_USERNAME",
    "sasl_password": "KAFKA_SASL_PASSWORD",
}
_SSL_VARIABLES = {
    "ssl_cafile": "KAFKA_SSL_CAFILE",
    "ssl_certfile": "KAFKA_SSL_CERTFILE",
    "ssl_keyfile": "KAFKA_SSL_KEYFILE",
    "ssl_key_password": "KAFKA_SSL_KEY_PASSWORD",
}
_SECRET_FIELDS = frozenset({"sasl_password", "ssl_key_password"})


def _parse_security_protocol(name: str, raw: str) -> SecurityProtocol:
    for protocol in SECURITY_PROTOCOLS:
        if raw.upper() == protocol:
            return protocol
    raise ConfigError(f"{name}={raw!r}: must be one of {', '.join(SECURITY_PROTOCOLS)}")


def _parse_sasl_mechanism(name: str, raw: str) -> SaslMechanism:
    for mechanism in SASL_MECHANISMS:
        if raw.upper() == mechanism:
            return mechanism
    raise ConfigError(f"{name}={raw!r}: must be one of {', '.join(SASL_MECHANISMS)}")


def _readable_file(name: str, raw: str) -> str:
    path = Path(raw).expanduser()
    if path.is_dir():
        raise ConfigError(f"{name}={raw!r}: is a directory, not a file")
    try:
        with open(path, "rb"):
            pass
    except OSError as err:
        raise ConfigError(f"{name}={raw!r}: cannot read it ({err.strerror or err})") from None
    return str(path)


def _resolve_kafka_security(
    given: Settings, env: Mapping[str, str], dev_broker: bool
) -> dict[str, Any]:
    """The SSL/SASL settings, checked together; a password never appears in an error."""
    out: dict[str, Any] = {}
    for field_name, var in {**_SASL_VARIABLES, **_SSL_VARIABLES}.items():
        explicit = getattr(given, field_name)
        if explicit is not None:
            out[field_name] = explicit
        elif field_name in _SECRET_FIELDS:
            # Taken as given (no stripping): spaces may be part of a password.
            out[field_name] = env.get(var) or None
        else:
            out[field_name] = _env(env, var)
    protocol: SecurityProtocol | None = given.security_protocol
    if protocol is None and not dev_broker:
        raw = _env(env, "KAFKA_SECURITY_PROTOCOL")
        protocol = _parse_security_protocol("KAFKA_SECURITY_PROTOCOL", raw) if raw else None
    if protocol is None and not dev_broker:
        # Credentials without a protocol would silently connect in plaintext.
        for field_name, var in {**_SASL_VARIABLES, **_SSL_VARIABLES}.items():
            if out[field_name] is not None:
                wanted = "SASL_PLAINTEXT or SASL_SSL" if field_name in _SASL_VARIABLES else "SSL"
                raise ConfigError(
                    f"{var} is set but KAFKA_SECURITY_PROTOCOL is not: set it to {wanted}"
                )
    out["security_protocol"] = protocol or "PLAINTEXT"
    mechanism = out["sasl_mechanism"]
    if isinstance(mechanism, str) and given.sasl_mechanism is None:
        mechanism = _parse_sasl_mechanism("KAFKA_SASL_MECHANISM", mechanism)
    out["sasl_mechanism"] = mechanism or "PLAIN"
    if out["security_protocol"] in ("SASL_PLAINTEXT", "SASL_SSL"):
        for field_name in ("sasl_username", "sasl_password"):
            if out[field_name] is None:
                raise ConfigError(
                    f"{_SASL_VARIABLES[field_name]} is not set: "
                    f"KAFKA_SECURITY_PROTOCOL={out['security_protocol']} needs "
                    "KAFKA_SASL_USERNAME and KAFKA_SASL_PASSWORD"
                )
    if out["security_protocol"] in ("SSL", "SASL_SSL"):
        for field_name in ("ssl_cafile", "ssl_certfile", "ssl_keyfile"):
            if out[field_name] is not None:
                out[field_name] = _readable_file(_SSL_VARIABLES[field_name], str(out[field_name]))
        if out["ssl_certfile"] is None:
            for field_name in ("ssl_keyfile", "ssl_key_password"):
                if out[field_name] is not None:
                    raise ConfigError(
                        f"{_SSL_VARIABLES[field_name]} is set without KAFKA_SSL_CERTFILE, "
                        "the client certificate it belongs to"
                    )
    return out


_CONNINFO_PASSWORD = re.compile(r"(password\s*=\s*)('(?:[^'\\]|\\.)*'|\S+)", re.IGNORECASE)


def mask_password(url: str) -> str:
    """``url`` (a URL or a ``key=value`` connection string) with any password as ``***``."""
    if "://" not in url:
        return _CONNINFO_PASSWORD.sub(r"\1***", url)
    parts = urlsplit(url)
    netloc = parts.netloc
    if "@" in netloc:
        credentials, host = netloc.rsplit("@", 1)
        if ":" in credentials:
            netloc = f"{credentials.split(':', 1)[0]}:***@{host}"
    query = urlencode(
        [(k, "***" if k.lower() == "password" else v) for k, v in parse_qsl(parts.query)],
        safe="*",
    )
    return urlunsplit(parts._replace(netloc=netloc, query=query))
