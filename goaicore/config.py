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
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

BrokerProfile = Literal["standard", "embedded"]

DEV_FILE_NAME = "dev.json"
_TOPIC_PREFIX_RE = re.compile(r"^[A-Za-z0-9._-]{1,200}$")
_HOST_PORT_RE = re.compile(r"^(\[[0-9A-Fa-f:]+\]|[A-Za-z0-9._-]+):(\d{1,5})$")
_DB_SCHEMA_RE = re.compile(r"^[a-z_][a-z0-9_]{0,62}$")


class ConfigError(ValueError):
    """A setting has a bad value; the message is one line naming the variable."""


@dataclass(frozen=True)
class Variable:
    """One documented environment variable (the README's configuration table)."""

    name: str
    default: str
    meaning: str


VARIABLES: tuple[Variable, ...] = (
    Variable(
        "KAFKA_BOOTSTRAP_SERVERS",
        "the dev stack's embedded broker",
        "Kafka bootstrap servers, `host:port[,host:port...]`.",
    ),
    Variable(
        "GOAICORE_BROKER_PROFILE",
        "`standard` (`embedded` for the dev stack's broker)",
        "`embedded` applies the client settings that work around the embedded "
        "broker's gaps (see the README); never use it against Apache Kafka.",
    ),
    Variable("GOAICORE_TOPIC_PREFIX", "`goaicore`", "Prefix of every topic name."),
    Variable("GOAICORE_PARTITIONS", "`6`", "Partitions of every topic (1 to 10000)."),
    Variable(
        "GOAICORE_REPLICATION_FACTOR",
        "`-1` (the broker's default)",
        "Replication factor of the topics goaicore creates.",
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
        "Largest record the clients send; keep it below the broker's message.max.bytes.",
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
        "`services.store.game_tools:registry`",
        "Tools the chat worker offers, as `package.module:attribute` (a list or dict of tools).",
    ),
    Variable(
        "GOAICORE_CONTEXT_TOKENS",
        "`16000`",
        "Estimated request size above which the chat worker compacts a conversation's history.",
    ),
    Variable(
        "GOAICORE_DATA_DIR",
        "`.goaicore/`",
        "Where the dev stack keeps dev.json and the embedded PostgreSQL data.",
    ),
    Variable(
        "GOAICORE_SCHEMAS_DIR",
        "`schemas/` of the checkout",
        "Folder of the Avro schemas, for an installed package run outside the checkout.",
    ),
)

DEFAULT_SYSTEM_PROMPT = (
    "You are the assistant of a game. Context messages tell you what happened in the "
    "game; use the tools for facts you do not have. Answer briefly."
)
DEFAULT_TOOLS = "services.store.game_tools:registry"

# Read by goaicore.avro.schemas when the schemas are loaded, not by Settings.
LOADER_VARIABLES = frozenset({"GOAICORE_SCHEMAS_DIR"})


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


def _parse_profile(name: str, raw: str) -> BrokerProfile:
    if raw == "standard":
        return "standard"
    if raw == "embedded":
        return "embedded"
    raise ConfigError(f"{name}={raw!r}: must be 'standard' or 'embedded'")


def _parse_data_dir(name: str, raw: str) -> Path:
    path = Path(raw).expanduser()
    if path.exists() and not path.is_dir():
        raise ConfigError(f"{name}={raw!r}: exists and is not a directory")
    return path


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


@dataclass(frozen=True, kw_only=True)
class Settings:
    """Where goaicore finds Kafka, PostgreSQL and an LLM, and how topics are laid out.

    Fields left out are read from the environment (see :data:`VARIABLES`);
    ``bootstrap_servers`` and ``database_url`` fall back to the running dev stack.
    """

    bootstrap_servers: str | None = None
    broker_profile: BrokerProfile | None = None
    topic_prefix: str | None = None
    partitions: int | None = None
    replication_factor: int | None = None
    database_url: str | None = None
    db_schema: str | None = None
    max_record_bytes: int | None = None
    openai_api_key: str | None = None
    openai_base_url: str | None = None
    model: str | None = None
    anthropic_api_key: str | None = None
    chat_concurrency: int | None = None
    read_wait: float | None = None
    turn_timeout: float | None = None
    system_prompt: str | None = None
    tools: str | None = None
    context_tokens: int | None = None
    data_dir: Path | None = None
    env: Mapping[str, str] | None = field(default=None, repr=False, compare=False)

    def __post_init__(self) -> None:
        env = os.environ if self.env is None else self.env
        resolved = _resolve(self, env)
        for name, value in resolved.items():
            object.__setattr__(self, name, value)
        object.__setattr__(self, "env", None)

    # Accessors with non-optional types for callers after resolution.
    @property
    def prefix(self) -> str:
        assert self.topic_prefix is not None
        return self.topic_prefix

    @property
    def partition_count(self) -> int:
        assert self.partitions is not None
        return self.partitions

    @property
    def record_limit(self) -> int:
        assert self.max_record_bytes is not None
        return self.max_record_bytes

    @property
    def schema(self) -> str:
        """The PostgreSQL schema holding the projection of this prefix's topics."""
        assert self.db_schema is not None
        return self.db_schema

    @property
    def data_path(self) -> Path:
        assert self.data_dir is not None
        return self.data_dir

    @property
    def embedded_broker(self) -> bool:
        """True when the embedded broker profile applies (DESIGN.md's measured gaps)."""
        return self.broker_profile == "embedded"

    def require_bootstrap(self) -> str:
        """The bootstrap servers, or a clear error when neither env nor dev stack has one."""
        if self.bootstrap_servers is None:
            raise ConfigError(
                "KAFKA_BOOTSTRAP_SERVERS is not set and no dev stack is running "
                f"(no live {self.data_path / DEV_FILE_NAME}); set it or start `make run`"
            )
        return self.bootstrap_servers

    def require_database_url(self) -> str:
        if self.database_url is None:
            raise ConfigError(
                "DATABASE_URL is not set and no dev stack is running "
                f"(no live {self.data_path / DEV_FILE_NAME}); set it or start `make run`"
            )
        return self.database_url

    def topic(self, name: str) -> str:
        """The full name of one of goaicore's topics under the configured prefix."""
        return f"{self.prefix}.{name}"

    def with_overrides(self, **changes: Any) -> Settings:
        return replace(self, **changes)


def _resolve(given: Settings, env: Mapping[str, str]) -> dict[str, Any]:
    """Fill every field left as None from the environment, then from dev.json."""
    out: dict[str, Any] = {}

    def pick(field_name: str, var: str, parse: Any, default: Any = None) -> Any:
        explicit = getattr(given, field_name)
        if explicit is not None:
            return explicit
        raw = _env(env, var)
        return parse(var, raw) if raw is not None else default

    out["data_dir"] = pick("data_dir", "GOAICORE_DATA_DIR", _parse_data_dir, Path(".goaicore"))
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
        lambda n, r: _parse_int(n, r, 1024, 100_000_000),
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
    out["tools"] = pick("tools", "GOAICORE_TOOLS", _parse_import_path, DEFAULT_TOOLS)
    out["context_tokens"] = pick(
        "context_tokens",
        "GOAICORE_CONTEXT_TOKENS",
        lambda n, r: _parse_int(n, r, 256, 10_000_000),
        16_000,
    )
    out["bootstrap_servers"] = pick(
        "bootstrap_servers", "KAFKA_BOOTSTRAP_SERVERS", parse_bootstrap_servers
    )
    out["database_url"] = pick("database_url", "DATABASE_URL", _parse_database_url)
    out["db_schema"] = pick("db_schema", "GOAICORE_DB_SCHEMA", _parse_db_schema, "public")
    profile = pick("broker_profile", "GOAICORE_BROKER_PROFILE", _parse_profile)

    if out["bootstrap_servers"] is None or out["database_url"] is None:
        dev = read_dev_file(out["data_dir"])
        if dev is not None:
            if out["bootstrap_servers"] is None and isinstance(dev.get("bootstrap_servers"), str):
                out["bootstrap_servers"] = dev["bootstrap_servers"]
                if profile is None and dev.get("broker_profile") in ("standard", "embedded"):
                    profile = dev["broker_profile"]
            if out["database_url"] is None and isinstance(dev.get("database_url"), str):
                out["database_url"] = dev["database_url"]
    out["broker_profile"] = profile or "standard"
    return out
