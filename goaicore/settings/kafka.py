"""Kafka's settings: where the broker is, how topics are laid out, how clients connect.

The security settings (SSL, SASL) are resolved together by :func:`resolve_security`:
they are checked against each other, and a password never appears in an error.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal, get_args

from goaicore.errors import ConfigError
from goaicore.settings.declare import Setting, by_field, one_of, read_env, whole_number

BrokerProfile = Literal["standard", "embedded"]
LocalBrokerKind = Literal["embedded", "kafka"]
SecurityProtocol = Literal["PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"]
SaslMechanism = Literal["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"]
SECURITY_PROTOCOLS: tuple[SecurityProtocol, ...] = get_args(SecurityProtocol)
SASL_MECHANISMS: tuple[SaslMechanism, ...] = get_args(SaslMechanism)

_TOPIC_PREFIX_RE = re.compile(r"^[A-Za-z0-9._-]{1,200}$")
_HOST_PORT_RE = re.compile(r"^(\[[0-9A-Fa-f:]+\]|[A-Za-z0-9._-]+):(\d{1,5})$")


def parse_bootstrap_servers(name: str, raw: str) -> str:
    """Check ``host:port[,host:port...]`` and return it without spaces."""
    parts = [p.strip() for p in raw.split(",")]
    for part in parts:
        match = _HOST_PORT_RE.match(part)
        if match is None or not 1 <= int(match.group(2)) <= 65535:
            raise ConfigError(f"{name}={raw!r}: expected host:port[,host:port...], got {part!r}")
    return ",".join(parts)


def _parse_topic_prefix(name: str, raw: str) -> str:
    if not _TOPIC_PREFIX_RE.match(raw):
        raise ConfigError(
            f"{name}={raw!r}: use 1 to 200 of the characters A-Z a-z 0-9 . _ - (Kafka topic names)"
        )
    return raw


BOOTSTRAP_SERVERS = Setting(
    "bootstrap_servers",
    "KAFKA_BOOTSTRAP_SERVERS",
    "the dev stack's local broker",
    "Kafka bootstrap servers, `host:port[,host:port...]`.",
    parse_bootstrap_servers,
    passed=True,
)
BROKER_PROFILE = Setting(
    "broker_profile",
    "GOAICORE_BROKER_PROFILE",
    "`standard` (`embedded` for the dev stack's embedded broker)",
    "`embedded` applies the client settings that work around the embedded "
    "broker's gaps (see the README); never use it against Apache Kafka.",
    one_of(*get_args(BrokerProfile)),
    "standard",
    passed=True,
)
LOCAL_BROKER = Setting(
    "local_broker",
    "GOAICORE_LOCAL_BROKER",
    "`embedded`",
    "Broker `goaicore dev` starts when `KAFKA_BOOTSTRAP_SERVERS` is unset: `embedded` "
    "(tansu, memory only, starts at once) or `kafka` (Apache Kafka, one KRaft node whose "
    "data is kept in `<GOAICORE_DATA_DIR>/kafka/`; needs Java 17+, and Maven once).",
    one_of(*get_args(LocalBrokerKind)),
    "embedded",
)
TOPIC_PREFIX = Setting(
    "topic_prefix",
    "GOAICORE_TOPIC_PREFIX",
    "`goaicore`",
    "Prefix of every topic name.",
    _parse_topic_prefix,
    "goaicore",
    passed=True,
)
PARTITIONS = Setting(
    "partitions",
    "GOAICORE_PARTITIONS",
    "`6`",
    "Partitions of every topic (1 to 10000).",
    whole_number(1, 10000),
    6,
    passed=True,
)
REPLICATION_FACTOR = Setting(
    "replication_factor",
    "GOAICORE_REPLICATION_FACTOR",
    "`-1` (the broker's default)",
    "Replication factor of the topics goaicore creates; it also sets their "
    "`min.insync.replicas` (see `GOAICORE_MIN_INSYNC_REPLICAS`).",
    whole_number(-1, 32),
    -1,
)
MIN_INSYNC_REPLICAS = Setting(
    "min_insync_replicas",
    "GOAICORE_MIN_INSYNC_REPLICAS",
    "`auto` (2 from 3 replicas on, else 1)",
    "`min.insync.replicas` of the topics goaicore creates: how many replicas hold an "
    "acknowledged write. At most the replication factor; `auto` follows it.",
    lambda name, raw: None if raw == "auto" else whole_number(1, 32)(name, raw),
)
SECURITY_PROTOCOL = Setting(
    "security_protocol",
    "KAFKA_SECURITY_PROTOCOL",
    "`PLAINTEXT`",
    "How every client connects to `KAFKA_BOOTSTRAP_SERVERS`: `PLAINTEXT`, `SSL`, "
    "`SASL_PLAINTEXT` or `SASL_SSL` (see Secure connections).",
    default="PLAINTEXT",
    passed=True,
)
SASL_MECHANISM = Setting(
    "sasl_mechanism",
    "KAFKA_SASL_MECHANISM",
    "`PLAIN`",
    "SASL mechanism: `PLAIN`, `SCRAM-SHA-256` or `SCRAM-SHA-512`.",
    default="PLAIN",
)
SASL_USERNAME = Setting(
    "sasl_username",
    "KAFKA_SASL_USERNAME",
    "unset",
    "SASL user name; required with `SASL_PLAINTEXT` and `SASL_SSL`.",
)
SASL_PASSWORD = Setting(
    "sasl_password",
    "KAFKA_SASL_PASSWORD",
    "unset",
    "SASL password; required with `SASL_PLAINTEXT` and `SASL_SSL`; never shown or logged.",
    secret=True,
)
SSL_CAFILE = Setting(
    "ssl_cafile",
    "KAFKA_SSL_CAFILE",
    "the system's CA certificates",
    "PEM file of the CA certificates that sign the brokers' certificates (`SSL`, `SASL_SSL`).",
)
SSL_CERTFILE = Setting(
    "ssl_certfile",
    "KAFKA_SSL_CERTFILE",
    "unset",
    "PEM file of the client certificate (and its chain), for brokers that require "
    "client authentication; it may hold the private key too.",
)
SSL_KEYFILE = Setting(
    "ssl_keyfile",
    "KAFKA_SSL_KEYFILE",
    "the key in `KAFKA_SSL_CERTFILE`",
    "PEM file of the client certificate's private key.",
)
SSL_KEY_PASSWORD = Setting(
    "ssl_key_password",
    "KAFKA_SSL_KEY_PASSWORD",
    "unset",
    "Password of an encrypted client private key; never shown or logged.",
    secret=True,
)
MAX_RECORD_BYTES = Setting(
    "max_record_bytes",
    "GOAICORE_MAX_RECORD_BYTES",
    "`900000`",
    "Largest record any client or worker sends (at least 65536); "
    "every snapshot is folded to fit 16 KiB under it.",
    whole_number(65_536, 100_000_000),
    900_000,
)

_SASL = by_field((SASL_MECHANISM, SASL_USERNAME, SASL_PASSWORD))
_SSL = by_field((SSL_CAFILE, SSL_CERTFILE, SSL_KEYFILE, SSL_KEY_PASSWORD))

CONNECTION: tuple[Setting, ...] = (
    BOOTSTRAP_SERVERS,
    BROKER_PROFILE,
    LOCAL_BROKER,
    TOPIC_PREFIX,
    PARTITIONS,
    REPLICATION_FACTOR,
    MIN_INSYNC_REPLICAS,
    SECURITY_PROTOCOL,
    *_SASL.values(),
    *_SSL.values(),
)
"""Where the broker is, the topics' layout, and how clients connect."""
RECORDS: tuple[Setting, ...] = (MAX_RECORD_BYTES,)
"""How large a record may be."""


def check_replication_factor(value: int | None, min_insync: int | None = None) -> None:
    """Refuse 0, inside the parsed range: Kafka takes -1 (its default) or 1 and up; and
    more in-sync replicas than replicas, which would refuse every acknowledged write."""
    if value == 0:
        raise ConfigError("GOAICORE_REPLICATION_FACTOR='0': must be -1 or from 1 to 32")
    if value is not None and value > 0 and min_insync is not None and min_insync > value:
        raise ConfigError(
            f"GOAICORE_MIN_INSYNC_REPLICAS={min_insync} is more than "
            f"GOAICORE_REPLICATION_FACTOR={value}: no write would ever be acknowledged"
        )


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


def resolve_security(
    given: Mapping[str, Any], env: Mapping[str, str], dev_broker: bool
) -> dict[str, Any]:
    """The SSL/SASL settings, checked together; a password never appears in an error.

    ``given`` holds the fields passed as keyword arguments (None where not given);
    ``dev_broker`` is true when the broker is one the dev stack started, which speaks
    plaintext: KAFKA_SECURITY_PROTOCOL is still checked, and anything else is refused.
    """
    credentials = {**_SASL, **_SSL}
    out: dict[str, Any] = {}
    for name, setting in credentials.items():
        explicit = given[name]
        if explicit is not None:
            out[name] = explicit
        elif setting.secret:
            # Taken as given (no stripping): spaces may be part of a password.
            out[name] = env.get(setting.variable) or None
        else:
            out[name] = read_env(env, setting.variable)
    protocol: SecurityProtocol | None = given["security_protocol"]
    if protocol is None:
        raw = read_env(env, SECURITY_PROTOCOL.variable)
        protocol = _parse_security_protocol(SECURITY_PROTOCOL.variable, raw) if raw else None
    if dev_broker and protocol not in (None, "PLAINTEXT"):
        raise ConfigError(
            f"KAFKA_SECURITY_PROTOCOL={protocol}, but the broker is the dev stack's own "
            "(dev.json), which speaks PLAINTEXT on loopback: unset KAFKA_SECURITY_PROTOCOL, "
            "or set KAFKA_BOOTSTRAP_SERVERS to another broker"
        )
    if protocol is None and not dev_broker:
        # Credentials without a protocol would silently connect in plaintext.
        for name, setting in credentials.items():
            if out[name] is not None:
                wanted = "SASL_PLAINTEXT or SASL_SSL" if name in _SASL else "SSL"
                raise ConfigError(
                    f"{setting.variable} is set but KAFKA_SECURITY_PROTOCOL is not: "
                    f"set it to {wanted}"
                )
    out["security_protocol"] = protocol or SECURITY_PROTOCOL.default
    mechanism = out["sasl_mechanism"]
    if isinstance(mechanism, str) and given["sasl_mechanism"] is None:
        mechanism = _parse_sasl_mechanism(SASL_MECHANISM.variable, mechanism)
    out["sasl_mechanism"] = mechanism or SASL_MECHANISM.default
    if out["security_protocol"] in ("SASL_PLAINTEXT", "SASL_SSL"):
        for name in ("sasl_username", "sasl_password"):
            if out[name] is None:
                raise ConfigError(
                    f"{_SASL[name].variable} is not set: "
                    f"KAFKA_SECURITY_PROTOCOL={out['security_protocol']} needs "
                    "KAFKA_SASL_USERNAME and KAFKA_SASL_PASSWORD"
                )
    if out["security_protocol"] in ("SSL", "SASL_SSL"):
        for name in ("ssl_cafile", "ssl_certfile", "ssl_keyfile"):
            if out[name] is not None:
                out[name] = _readable_file(_SSL[name].variable, str(out[name]))
        if out["ssl_certfile"] is None:
            for name in ("ssl_keyfile", "ssl_key_password"):
                if out[name] is not None:
                    raise ConfigError(
                        f"{_SSL[name].variable} is set without KAFKA_SSL_CERTFILE, "
                        "the client certificate it belongs to"
                    )
    return out
