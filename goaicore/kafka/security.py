"""Secure connections to Kafka: the one place Settings become each client's SSL/SASL options.

Every goaicore client connects the same way: kafka-python's producers, consumers
and admin clients (through ``goaicore.kafka.connection``), aiokafka's consumers
and Faust's consumers and producers (through ``broker_credentials``). Settings
come from ``KAFKA_SECURITY_PROTOCOL``, ``KAFKA_SASL_*`` and ``KAFKA_SSL_*``
(see ``goaicore.settings.kafka``).

A client that cannot connect because the brokers refused its credentials or its
TLS handshake gets one :class:`KafkaSecurityError` line saying so, instead of
kafka-python's generic bootstrap timeout. Passwords never appear in any message.
"""

from __future__ import annotations

import asyncio
import logging
import ssl
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from functools import lru_cache
from typing import Any

from goaicore.errors import EXIT_CONFIG, BrokerError, ConfigError
from goaicore.settings import Settings


class KafkaSecurityError(BrokerError, ConnectionError):
    """The brokers refused the client's credentials or TLS handshake; one line says which."""

    exit_code = EXIT_CONFIG


def uses_ssl(settings: Settings) -> bool:
    return settings.security_protocol in ("SSL", "SASL_SSL")


def uses_sasl(settings: Settings) -> bool:
    return settings.security_protocol in ("SASL_PLAINTEXT", "SASL_SSL")


def describe(settings: Settings) -> str:
    """How the clients connect, for messages: never the password."""
    protocol = settings.security_protocol or "PLAINTEXT"
    if uses_sasl(settings):
        return f"{protocol}, {settings.sasl_mechanism} as user {settings.sasl_username!r}"
    if uses_ssl(settings) and settings.ssl_certfile:
        return f"{protocol} with a client certificate"
    return protocol


def _protocol_and_sasl(settings: Settings) -> dict[str, Any]:
    """The options both client libraries spell alike: the protocol and the SASL login."""
    options: dict[str, Any] = {"security_protocol": settings.security_protocol or "PLAINTEXT"}
    if uses_sasl(settings):
        options.update(
            sasl_mechanism=settings.sasl_mechanism,
            sasl_plain_username=settings.sasl_username,
            sasl_plain_password=settings.sasl_password,
        )
    return options


def kafka_python_options(settings: Settings) -> dict[str, Any]:
    """Keyword arguments of kafka-python's KafkaProducer, KafkaConsumer and KafkaAdminClient."""
    _mask_logged_configs()
    options = _protocol_and_sasl(settings)
    if uses_ssl(settings):
        ssl_context(settings)  # a bad PEM file is a ConfigError now, not a failed handshake
        options["ssl_check_hostname"] = True
        if settings.ssl_cafile:
            options["ssl_cafile"] = settings.ssl_cafile
        if settings.ssl_certfile:
            options["ssl_certfile"] = settings.ssl_certfile
            # kafka-python reads the key from the certificate file when none is given.
            options["ssl_keyfile"] = settings.ssl_keyfile or settings.ssl_certfile
            if settings.ssl_key_password:
                options["ssl_password"] = settings.ssl_key_password
    return options


# Client options that hold a secret, and the kafka-python loggers that log whole configs
# (the admin client at debug level).
_SECRET_OPTIONS = frozenset({"sasl_plain_password", "ssl_password"})
_CONFIG_LOGGERS = ("kafka.admin.client",)


class _MaskConfigs(logging.Filter):
    """Replaces secret options by ``***`` in the configs a record carries."""

    def filter(self, record: logging.LogRecord) -> bool:
        if isinstance(record.args, dict):
            record.args = _masked(record.args)
        elif isinstance(record.args, tuple):
            record.args = tuple(_masked(a) if isinstance(a, dict) else a for a in record.args)
        return True


def _masked(options: dict[Any, Any]) -> dict[Any, Any]:
    return {k: "***" if k in _SECRET_OPTIONS and v else v for k, v in options.items()}


def _mask_logged_configs() -> None:
    for name in _CONFIG_LOGGERS:
        logger = logging.getLogger(name)
        if not any(isinstance(f, _MaskConfigs) for f in logger.filters):
            logger.addFilter(_MaskConfigs())


def aiokafka_options(settings: Settings) -> dict[str, Any]:
    """Keyword arguments of aiokafka's clients (AIOKafkaConsumer, AIOKafkaProducer)."""
    options = _protocol_and_sasl(settings)
    if uses_ssl(settings):
        options["ssl_context"] = ssl_context(settings)
    return options


def faust_credentials(settings: Settings) -> Any:
    """Faust's ``broker_credentials``: SASL or SSL credentials, or None for PLAINTEXT.

    Faust hands them to aiokafka for its consumer, its producer and the client it
    creates topics with.
    """
    import faust

    if uses_sasl(settings):
        return faust.SASLCredentials(
            username=settings.sasl_username,
            password=settings.sasl_password,
            mechanism=settings.sasl_mechanism,
            ssl_context=ssl_context(settings) if uses_ssl(settings) else None,
        )
    if uses_ssl(settings):
        return faust.SSLCredentials(ssl_context(settings))
    return None


def ssl_context(settings: Settings) -> ssl.SSLContext:
    """A TLS client context: the CA file (else the system's CAs), the client certificate.

    Hostnames are checked against the brokers' certificates. A file that is not
    what its variable says is a ConfigError naming the variable.
    """
    return _context(
        settings.ssl_cafile,
        settings.ssl_certfile,
        settings.ssl_keyfile,
        settings.ssl_key_password,
    )


@lru_cache(maxsize=8)
def _context(
    cafile: str | None, certfile: str | None, keyfile: str | None, password: str | None
) -> ssl.SSLContext:
    try:
        context = ssl.create_default_context(ssl.Purpose.SERVER_AUTH, cafile=cafile)
    except (ssl.SSLError, OSError, ValueError) as err:
        raise ConfigError(
            f"KAFKA_SSL_CAFILE={cafile!r}: not a PEM file of CA certificates ({_reason(err)})"
        ) from None
    if certfile:
        try:
            context.load_cert_chain(certfile, keyfile, password)
        except (ssl.SSLError, OSError, ValueError) as err:
            names = "KAFKA_SSL_CERTFILE" + (", KAFKA_SSL_KEYFILE" if keyfile else "")
            hint = " or KAFKA_SSL_KEY_PASSWORD is wrong" if password else ""
            raise ConfigError(
                f"{names}: cannot load the client certificate and its key{hint} ({_reason(err)})"
            ) from None
    return context


def _reason(err: BaseException) -> str:
    if isinstance(err, ssl.SSLError) and err.reason:
        return str(err.reason)
    if isinstance(err, OSError) and err.strerror:
        return err.strerror
    return type(err).__name__


@contextmanager
def explain_connect_failures(settings: Settings) -> Iterator[None]:
    """Turn a kafka-python bootstrap failure caused by SASL or TLS into KafkaSecurityError.

    kafka-python retries a refused login until its bootstrap timeout and then
    raises a generic timeout (the broker's answer is logged, when it is read at
    all), so on such a failure one direct connection (aiokafka's, which raises
    what the broker said) finds out why.
    """
    from kafka.errors import KafkaError

    try:
        yield
    except KafkaError:
        if settings.security_protocol in (None, "PLAINTEXT"):
            raise
        problem = probe(settings)
        if problem is None:
            raise
        raise KafkaSecurityError(problem) from None


def probe(settings: Settings, timeout: float = 15.0) -> str | None:
    """Connect once to each bootstrap server as the clients do; one line about a refusal.

    None when every server accepted the connection or none could be reached at all
    (a problem that is not about credentials or TLS).
    """
    outcome: list[str | None] = [None]

    def run() -> None:
        outcome[0] = asyncio.run(_probe(settings, timeout))

    # A thread of its own: the caller may be running an event loop.
    thread = threading.Thread(target=run, name="goaicore-kafka-probe", daemon=True)
    thread.start()
    thread.join(timeout * 2 + 5)
    return outcome[0]


async def _probe(settings: Settings, seconds: float) -> str | None:
    from aiokafka.conn import create_conn  # type: ignore[import-untyped]

    # A library's logger stays quiet unless the application configures logging.
    quiet = logging.getLogger("aiokafka")
    if not quiet.handlers:
        quiet.addHandler(logging.NullHandler())
    options = aiokafka_options(settings)
    for server in (settings.bootstrap_servers or "").split(","):
        host, _, port = server.rpartition(":")
        try:
            conn = await asyncio.wait_for(
                create_conn(
                    host.strip("[]"),
                    int(port),
                    client_id="goaicore-probe",
                    request_timeout_ms=int(seconds * 1000),
                    **options,
                ),
                seconds,
            )
        except Exception as err:
            problem = security_problem(settings, server, err)
            if problem is not None:
                return problem
            continue
        conn.close()
    return None


def security_problem(settings: Settings, server: str, err: BaseException) -> str | None:
    """One line about a SASL or TLS refusal, or None when ``err`` is about something else."""
    from aiokafka import errors  # type: ignore[import-untyped]

    where = f"Kafka at {server} ({describe(settings)})"
    text = _one_line(err)
    tls = _tls_error(err)
    if isinstance(err, errors.SaslAuthenticationFailed):
        line = (
            f"authentication failed with {where}: {text}; "
            "check KAFKA_SASL_USERNAME, KAFKA_SASL_PASSWORD and KAFKA_SASL_MECHANISM"
        )
    elif isinstance(err, errors.UnsupportedSaslMechanismError):
        line = f"{where} refused the SASL mechanism: {text}; check KAFKA_SASL_MECHANISM"
    elif isinstance(err, errors.BrokerResponseError) and "SASL" in type(err).__name__.upper():
        line = f"SASL with {where} failed: {text}"
    elif tls is not None:
        line = (
            f"TLS handshake with {where} failed: {_one_line(tls)}; check "
            "KAFKA_SECURITY_PROTOCOL, KAFKA_SSL_CAFILE and, where the brokers require one, "
            "KAFKA_SSL_CERTFILE"
        )
    else:
        return None
    return redact(line, settings)


def _tls_error(err: BaseException) -> ssl.SSLError | None:
    """The TLS error behind ``err`` (itself, or what it was raised from), if any."""
    seen: BaseException | None = err
    for _ in range(5):
        if seen is None:
            return None
        if isinstance(seen, ssl.SSLError):
            return seen
        seen = seen.__cause__ or seen.__context__
    return None


def _one_line(err: BaseException) -> str:
    text = " ".join(str(err).split()) or type(err).__name__
    return text[:300]


def redact(text: str, settings: Settings) -> str:
    """``text`` with the settings' passwords replaced by ``***``."""
    for secret in (settings.sasl_password, settings.ssl_key_password):
        if secret:
            text = text.replace(secret, "***")
    return text
