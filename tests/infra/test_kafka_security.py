"""Every client over SSL, SASL_PLAINTEXT and SASL_SSL, on Apache Kafka with secured listeners.

One local Apache Kafka node for the module, with a listener per security setup:

- ``SASL``: SASL_PLAINTEXT with PLAIN, SCRAM-SHA-256 and SCRAM-SHA-512;
- ``TLS``: SSL, the broker's certificate signed by a test CA;
- ``MTLS``: SSL that requires a client certificate;
- ``SASLTLS``: SASL_SSL with SCRAM.

Passwords are random per run, and no output, log or repr may contain them.
"""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psycopg
import pytest
from psycopg import sql

from goaicore.clients import ChatClient, EventPublisher, HistoryReader, ReplySubscriber
from goaicore.config import SaslMechanism, SecurityProtocol, Settings
from goaicore.devstack.worker_process import settings_env
from goaicore.kafka import KafkaSecurityError, ensure_topics
from goaicore.kafka.apache import Listener, LocalKafka, unavailable_reason
from goaicore.kafka.connection import make_consumer, make_producer
from goaicore.records import ConversationEvent, GameEvent, new_event
from tests.kafka_certs import CertificateFiles, make_certificates

_REASON = unavailable_reason()
if _REASON is not None:
    pytest.skip(_REASON, allow_module_level=True)

pytestmark = pytest.mark.integration

USER = "goaicore-app"
PASSWORD = f"pw-{uuid.uuid4().hex}"
PLAIN_PASSWORD = f"plain-{uuid.uuid4().hex}"
KEY_PASSWORD = f"key-{uuid.uuid4().hex}"
SECRETS = (PASSWORD, PLAIN_PASSWORD, KEY_PASSWORD)

_SCRAM = "org.apache.kafka.common.security.scram.ScramLoginModule required;"
_SASL = {
    "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512",
    "plain.sasl.jaas.config": (
        "org.apache.kafka.common.security.plain.PlainLoginModule required "
        f'user_{USER}="{PLAIN_PASSWORD}";'
    ),
    "scram-sha-256.sasl.jaas.config": _SCRAM,
    "scram-sha-512.sasl.jaas.config": _SCRAM,
}


@dataclass(frozen=True)
class SecureKafka:
    kafka: LocalKafka
    certs: CertificateFiles
    folder: Path

    def settings(
        self,
        listener: str,
        protocol: SecurityProtocol,
        mechanism: SaslMechanism = "SCRAM-SHA-256",
        password: str | None = None,
        **fields: Any,
    ) -> Settings:
        """Settings of a fresh topic prefix, on one listener, with the right credentials."""
        prefix = f"s{uuid.uuid4().hex[:12]}"
        data_dir = self.folder / prefix
        data_dir.mkdir()
        security: dict[str, Any] = {}
        if protocol in ("SASL_PLAINTEXT", "SASL_SSL"):
            right = PLAIN_PASSWORD if mechanism == "PLAIN" else PASSWORD
            security.update(
                sasl_mechanism=mechanism,
                sasl_username=USER,
                sasl_password=password if password is not None else right,
            )
        if protocol in ("SSL", "SASL_SSL"):
            security["ssl_cafile"] = str(self.certs.ca)
        return Settings(
            env={},
            bootstrap_servers=self.kafka.bootstrap(listener),
            broker_profile="standard",
            security_protocol=protocol,
            topic_prefix=prefix,
            partitions=2,
            data_dir=data_dir,
            **{**security, **fields},
        )


@pytest.fixture(scope="module")
def secure_kafka(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SecureKafka]:
    folder = tmp_path_factory.mktemp("secure-kafka")
    certs = make_certificates(folder / "certs", KEY_PASSWORD)
    tls = {
        "ssl.keystore.type": "PEM",
        "ssl.keystore.location": str(certs.broker_keystore),
        "ssl.truststore.type": "PEM",
        "ssl.truststore.location": str(certs.ca),
    }
    kafka = LocalKafka(
        folder / "kafka",
        nodes=1,
        overrides={
            "group.initial.rebalance.delay.ms": "0",
            "offsets.topic.num.partitions": "4",
        },
        listeners=[
            Listener("SASL", "SASL_PLAINTEXT", _SASL),
            Listener("TLS", "SSL", tls),
            Listener("MTLS", "SSL", {**tls, "ssl.client.auth": "required"}),
            Listener("SASLTLS", "SASL_SSL", {**_SASL, **tls}),
        ],
        scram_users={
            "SCRAM-SHA-256": {USER: PASSWORD},
            "SCRAM-SHA-512": {USER: PASSWORD},
        },
    )
    kafka.start(timeout=300)
    try:
        yield SecureKafka(kafka, certs, folder)
    finally:
        kafka.stop()


def assert_no_secret(*texts: str) -> None:
    for text in texts:
        for secret in SECRETS:
            assert secret not in text


def events_for(conversation_id: str, count: int) -> list[ConversationEvent]:
    return [
        new_event(conversation_id, GameEvent(kind="tick", text=f"tick {n}"), source="test")
        for n in range(count)
    ]


def round_trip(settings: Settings) -> None:
    """Create the topics, publish events, read them back from the log."""
    ensure_topics(settings, timeout_s=60)
    sent = events_for("player-1", 3) + events_for("player-2", 2)
    with EventPublisher(settings, source="test") as publisher:
        positions = publisher.publish_many((e.conversation_id, e) for e in sent)
    assert len(positions) == len(sent)
    with HistoryReader(settings) as history:
        for conversation in ("player-1", "player-2"):
            read = [e.event_id for e in history.events(conversation)]
            assert read == [e.event_id for e in sent if e.conversation_id == conversation]
    assert_no_secret(repr(settings), repr(settings.with_overrides(partitions=2)))


@pytest.mark.parametrize("mechanism", ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_round_trip_over_sasl_plaintext(
    secure_kafka: SecureKafka, mechanism: SaslMechanism
) -> None:
    round_trip(secure_kafka.settings("SASL", "SASL_PLAINTEXT", mechanism))


def test_round_trip_over_ssl_with_a_ca_file(secure_kafka: SecureKafka) -> None:
    round_trip(secure_kafka.settings("TLS", "SSL"))


def test_round_trip_over_ssl_with_a_client_certificate(secure_kafka: SecureKafka) -> None:
    certs = secure_kafka.certs
    settings = secure_kafka.settings(
        "MTLS",
        "SSL",
        ssl_certfile=str(certs.client_cert),
        ssl_keyfile=str(certs.client_key),
        ssl_key_password=certs.client_key_password,
    )
    round_trip(settings)


@pytest.mark.parametrize("mechanism", ["SCRAM-SHA-512", "PLAIN"])
def test_round_trip_over_sasl_ssl(secure_kafka: SecureKafka, mechanism: SaslMechanism) -> None:
    round_trip(secure_kafka.settings("SASLTLS", "SASL_SSL", mechanism))


def test_a_wrong_password_is_one_clear_error(secure_kafka: SecureKafka) -> None:
    wrong = f"wrong-{uuid.uuid4().hex}"
    for listener, protocol in (("SASL", "SASL_PLAINTEXT"), ("SASLTLS", "SASL_SSL")):
        settings = secure_kafka.settings(listener, protocol, password=wrong)  # type: ignore[arg-type]
        with pytest.raises(KafkaSecurityError) as caught:
            make_producer(settings, bootstrap_timeout_ms=5000)
        message = str(caught.value)
        assert message.startswith(
            f"authentication failed with Kafka at {settings.bootstrap_servers}"
        )
        assert "invalid credentials" in message
        assert "\n" not in message
        assert wrong not in message


def test_the_clients_over_aiokafka_say_what_the_broker_refused(secure_kafka: SecureKafka) -> None:
    """The sync clients are facades over aiokafka ones: a refusal is the same one line."""
    wrong = f"wrong-{uuid.uuid4().hex}"
    settings = secure_kafka.settings("SASL", "SASL_PLAINTEXT", password=wrong)
    with pytest.raises(KafkaSecurityError) as caught:
        EventPublisher(settings)
    message = str(caught.value)
    assert message.startswith(f"authentication failed with Kafka at {settings.bootstrap_servers}")
    assert wrong not in message
    no_client_cert = secure_kafka.settings("MTLS", "SSL")
    with pytest.raises(KafkaSecurityError, match=r"^TLS handshake with Kafka at .* failed: "):
        HistoryReader(no_client_cert)


def test_tls_refusals_say_what_failed(secure_kafka: SecureKafka) -> None:
    no_client_cert = secure_kafka.settings("MTLS", "SSL")
    with pytest.raises(KafkaSecurityError, match=r"^TLS handshake with Kafka at .* failed: "):
        make_consumer(no_client_cert, bootstrap_timeout_ms=5000)
    other_ca = secure_kafka.settings("TLS", "SSL", ssl_cafile=str(secure_kafka.certs.other_ca))
    with pytest.raises(KafkaSecurityError, match="CERTIFICATE_VERIFY_FAILED"):
        make_consumer(other_ca, bootstrap_timeout_ms=5000)


def cli(settings: Settings, *args: str, timeout: float = 180) -> subprocess.CompletedProcess[str]:
    """``goaicore`` as a user runs it: the settings as environment variables."""
    return subprocess.run(
        [sys.executable, "-m", "goaicore", *args],
        env=settings_env(settings),
        capture_output=True,
        text=True,
        timeout=timeout,
        stdin=subprocess.DEVNULL,
    )


def test_create_topics_and_publish_from_the_cli_over_sasl(secure_kafka: SecureKafka) -> None:
    settings = secure_kafka.settings("SASLTLS", "SASL_SSL", "SCRAM-SHA-256")
    created = cli(settings, "create-topics")
    assert created.returncode == 0, created.stderr
    assert f"created {settings.topic('events')} partitions=2" in created.stdout
    again = cli(settings, "create-topics")
    assert again.returncode == 0, again.stderr
    assert f"exists  {settings.topic('events')} partitions=2" in again.stdout
    published = cli(settings, "publish-event", "player-9", "Checked in", "--kind", "check-in")
    assert published.returncode == 0, published.stderr
    history = cli(settings, "history", "player-9")
    assert history.returncode == 0, history.stderr
    assert "Checked in" in history.stdout
    assert_no_secret(*(r.stdout + r.stderr for r in (created, again, published, history)))


def test_the_cli_says_authentication_failed_in_one_line(secure_kafka: SecureKafka) -> None:
    wrong = f"wrong-{uuid.uuid4().hex}"
    settings = secure_kafka.settings("SASL", "SASL_PLAINTEXT", "SCRAM-SHA-512", password=wrong)
    result = cli(settings, "create-topics", "--timeout", "10")
    assert result.returncode == 3  # authentication failed: configuration
    assert result.stdout == ""
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("goaicore: authentication failed with Kafka at ")
    assert "SCRAM-SHA-512" in lines[0]
    assert "Traceback" not in result.stderr
    assert wrong not in result.stderr
    assert_no_secret(result.stderr)


def test_store_worker_folds_and_answers_over_scram_and_tls(secure_kafka: SecureKafka) -> None:
    from tests.chat_agent.helpers import ChatWorker
    from tests.store.workers import wait_folded

    settings = secure_kafka.settings("SASLTLS", "SASL_SSL", "SCRAM-SHA-256")
    ensure_topics(settings, timeout_s=60)
    worker = ChatWorker(settings).start()  # no LLM variables: the offline model
    try:
        with EventPublisher(settings, source="test") as publisher:
            publisher.game_event("player-3", "Checked in at Harrogate Theatre", kind="check-in")
            last = publisher.user_message("player-3", "On my way")
        stored = wait_folded(settings, {"player-3": last.offset}, timeout=240, workers=(worker,))
        assert [m.role for m in stored["player-3"].messages][-1] == "user"
        with (
            ReplySubscriber(settings, group_id="gateway", from_beginning=True) as replies,
            ChatClient(settings) as chat,
        ):
            reply = chat.ask("player-3", "hello", timeout=180)
            assert reply.status == "ok", reply
            assert (reply.text or "").startswith("[offline]")
            subscribed = next(
                (r for r in replies.replies(idle_timeout=60) if r.request_id == reply.request_id),
                None,
            )
            assert subscribed == reply
        with HistoryReader(settings) as history:
            kinds = [type(e.body).__name__ for e in history.events("player-3")]
        assert kinds[-2:] == ["UserMessage", "AssistantTurn"]
    finally:
        code = worker.stop()
    log = worker.log()
    assert code == 0, log[-4000:]
    assert "Traceback" not in log, log[-4000:]
    assert_no_secret(log)


@pytest.fixture
def projected(secure_kafka: SecureKafka, postgres_url: str) -> Iterator[Settings]:
    settings = secure_kafka.settings(
        "SASL", "SASL_PLAINTEXT", "SCRAM-SHA-512", database_url=postgres_url
    )
    settings = settings.with_overrides(db_schema=settings.topic_prefix)
    ensure_topics(settings, timeout_s=60)
    yield settings
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        conn.execute(
            sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(settings.db_schema))
        )


def test_projector_over_scram(projected: Settings) -> None:
    from tests.projector.helpers import ProjectorProcess, query

    sent = events_for("player-4", 4)
    with EventPublisher(projected, source="test") as publisher:
        publisher.publish_many((e.conversation_id, e) for e in sent)
    projector = ProjectorProcess(projected).start()
    try:
        deadline = time.monotonic() + 180
        rows: list[tuple[Any, ...]] = []
        while time.monotonic() < deadline:
            assert projector.process is not None
            assert projector.process.poll() is None, projector.log()[-4000:]
            try:
                rows = query(
                    projected,
                    "SELECT event_id FROM conversation_events WHERE conversation_id = %s "
                    "ORDER BY log_offset",
                    "player-4",
                )
            except psycopg.errors.UndefinedTable:
                rows = []
            if len(rows) == len(sent):
                break
            time.sleep(0.5)
        assert [str(r[0]) for r in rows] == [e.event_id for e in sent]
    finally:
        projector.stop()
    assert_no_secret(projector.log())


def test_passwords_stay_out_of_the_environment_listing(secure_kafka: SecureKafka) -> None:
    settings = secure_kafka.settings("SASL", "SASL_PLAINTEXT")
    env = settings_env(settings)
    assert env["KAFKA_SASL_PASSWORD"] == PASSWORD  # the child needs it ...
    assert_no_secret(repr(settings), str(settings))  # ... but nothing shows it
    assert os.environ.get("KAFKA_SASL_PASSWORD") != PASSWORD


def test_debug_logs_of_the_clients_hold_no_password(
    secure_kafka: SecureKafka, caplog: pytest.LogCaptureFixture
) -> None:
    certs = secure_kafka.certs
    settings = secure_kafka.settings(
        "SASLTLS",
        "SASL_SSL",
        "SCRAM-SHA-512",
        ssl_certfile=str(certs.client_cert),
        ssl_keyfile=str(certs.client_key),
        ssl_key_password=certs.client_key_password,
    )
    with caplog.at_level(logging.DEBUG):
        round_trip(settings)
    assert "sasl_plain_password" in caplog.text  # the admin client logs its whole config
    assert_no_secret(caplog.text)
