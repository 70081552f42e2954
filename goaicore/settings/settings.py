"""``Settings``: every component's settings, resolved at once.

``Settings()`` with no arguments reads the environment; where Kafka or
PostgreSQL are not configured there, it uses the endpoints the running
``goaicore dev`` stack wrote to ``<data dir>/dev.json``. Keyword arguments
override both. A bad value raises :class:`ConfigError` with one line naming the
variable and what is wrong, so the CLI can stop with exactly that line.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any

from goaicore.errors import ConfigError
from goaicore.settings import (
    core,
    dev_stack,
    http,
    kafka,
    logs,
    postgres,
    providers,
    sealing,
    worker,
)
from goaicore.settings.core import NativeCore
from goaicore.settings.declare import Setting, Variable, by_field, read_env
from goaicore.settings.dev_stack import DEV_FILE_NAME
from goaicore.settings.kafka import BrokerProfile, LocalBrokerKind, SaslMechanism, SecurityProtocol
from goaicore.settings.loaders import LOADERS
from goaicore.settings.logs import LogFormat
from goaicore.settings.postgres import mask_password
from goaicore.settings.providers import OpenAIApi
from goaicore.settings.worker import TableStore

DECLARED: tuple[Setting, ...] = (
    *kafka.CONNECTION,
    *postgres.DATABASE,
    *kafka.RECORDS,
    *providers.PROVIDERS,
    *worker.CHAT,
    *logs.LOGS,
    *worker.PRICES,
    *http.HTTP,
    *sealing.SEALING,
    *worker.TABLE,
    *core.CORE,
    *dev_stack.DEV_STACK,
    *LOADERS,
)
"""Every setting, in the order of the README's table (which groups them for a reader, so
some components appear twice). Variables are parsed in this order, so of several bad
ones the first here is reported; the checks across settings come after."""
VARIABLES: tuple[Variable, ...] = tuple(setting.documented for setting in DECLARED)
_BY_FIELD = by_field(DECLARED)
FIELD_VARIABLES: Mapping[str, str] = {name: s.variable for name, s in _BY_FIELD.items()}
"""Each setting's variable (``Settings.environment``)."""
ALWAYS_PASSED = frozenset(name for name, s in _BY_FIELD.items() if s.passed)
"""The settings a child process is always given: where the broker, the database and
the data are, and the topic layout."""
SECRET_FIELDS = frozenset(name for name, s in _BY_FIELD.items() if s.secret)
"""The settings never shown: keys, passwords, tokens."""

FROM_ENVIRONMENT: Any = None
"""The default of a field that always has a value: read from the environment, else its default."""


@dataclass(frozen=True, kw_only=True)
class Settings:
    """Where goaicore finds Kafka, PostgreSQL and an LLM, and how topics are laid out.

    Fields left out are read from the environment (see :data:`VARIABLES`), else take
    their defaults, so every field typed without ``None`` has a value once built;
    ``bootstrap_servers`` and ``database_url`` fall back to the running dev stack and
    may stay unset (``require_bootstrap`` says why). Each field is declared, with its
    variable, in its component's module (:data:`DECLARED`).
    """

    bootstrap_servers: str | None = None
    broker_profile: BrokerProfile = FROM_ENVIRONMENT
    local_broker: LocalBrokerKind = FROM_ENVIRONMENT
    security_protocol: SecurityProtocol | None = None
    sasl_mechanism: SaslMechanism | None = None
    sasl_username: str | None = None
    sasl_password: str | None = None
    ssl_cafile: str | None = None
    ssl_certfile: str | None = None
    ssl_keyfile: str | None = None
    ssl_key_password: str | None = None
    topic_prefix: str = FROM_ENVIRONMENT
    partitions: int = FROM_ENVIRONMENT
    replication_factor: int = FROM_ENVIRONMENT
    min_insync_replicas: int | None = FROM_ENVIRONMENT
    """GOAICORE_MIN_INSYNC_REPLICAS; None: from the replication factor."""
    database_url: str | None = None
    db_schema: str = FROM_ENVIRONMENT
    max_record_bytes: int = FROM_ENVIRONMENT
    openai_api_key: str | None = None
    openai_base_url: str | None = None
    openai_api: OpenAIApi = FROM_ENVIRONMENT
    model: str | None = None
    anthropic_api_key: str | None = None
    chat_concurrency: int = FROM_ENVIRONMENT
    tool_threads: int = FROM_ENVIRONMENT
    history_threads: int = FROM_ENVIRONMENT
    read_wait: float = FROM_ENVIRONMENT
    turn_timeout: float = FROM_ENVIRONMENT
    stream_hold_ms: int = FROM_ENVIRONMENT
    system_prompt: str = FROM_ENVIRONMENT
    tools: str | None = None
    """GOAICORE_TOOLS; None: the worker offers its own tools."""
    context_tokens: int = FROM_ENVIRONMENT
    table_store: TableStore = FROM_ENVIRONMENT
    snapshot_flush_ms: int = FROM_ENVIRONMENT
    snapshot_flush_bytes: int = FROM_ENVIRONMENT
    native: NativeCore = FROM_ENVIRONMENT
    prices: Path | None = None
    log_format: LogFormat = FROM_ENVIRONMENT
    http_tokens: tuple[str, ...] = FROM_ENVIRONMENT
    worker_secret: str | None = None
    master_keys: str | None = None
    intake_override: bool | None = None
    """GOAICORE_INTAKE; None: :attr:`intake` follows the master keys."""
    erasure_window: float = FROM_ENVIRONMENT
    data_dir: Path = FROM_ENVIRONMENT
    env: Mapping[str, str] | None = field(default=None, repr=False, compare=False)

    def __repr__(self) -> str:
        """Every setting but the secrets, with the password of a database URL masked;
        API keys, Kafka passwords, tokens and master keys are not shown at all."""
        shown = []
        for item in fields(self):
            if not item.repr or item.name in SECRET_FIELDS:
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


def _resolve(given: Settings, env: Mapping[str, str]) -> dict[str, Any]:
    """Every field: given as an argument, else from the environment, else from a running
    dev stack (the broker, the database and what goes with them), else its default."""
    explicit = {name: getattr(given, name) for name in _BY_FIELD}
    out: dict[str, Any] = {}
    for name, setting in _BY_FIELD.items():
        if setting.parse is None:
            continue  # resolved by its component, below
        raw = read_env(env, setting.variable) if explicit[name] is None else None
        out[name] = setting.parse(setting.variable, raw) if raw is not None else explicit[name]
    kafka.check_replication_factor(out["replication_factor"], out["min_insync_replicas"])
    out["http_tokens"] = explicit["http_tokens"]
    if out["http_tokens"] is None:
        out["http_tokens"] = http.read_http_tokens(env)
    dev_broker = dev_stack.fill_from_dev_stack(out)
    for name, value in out.items():
        if value is None:
            out[name] = _BY_FIELD[name].default
    out.update(kafka.resolve_security(explicit, env, dev_broker))
    return out
