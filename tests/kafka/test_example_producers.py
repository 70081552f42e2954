"""The example producers of ``examples/producers/`` keep the producer contract.

Each example (Python on confluent-kafka and fastavro; Java on kafka-clients and Avro's
``BinaryMessageEncoder``, its jars fetched with Maven into goaicore's cache) runs as a
service would run it, in a process of its own and without goaicore, and publishes one
game event to a deployment that seals (to ``intake``) and to one that does not (to
``events``, and to ``intake``, which works there too), as README, "Publishing from
another language", says. Then the event is in the conversation's history and snapshot,
in its key's partition, with no dead letter, and a question to the chat worker brings
it to the model.

The conversation ids have a non-ASCII character, and librdkafka's default partitioner
(CRC32) would put them in another partition than murmur2 does: a key sent in another
encoding, or a partitioner other than murmur2, lands elsewhere and fails here. The Java
example is skipped, with the reason, only where Java or Maven is missing.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from goaicore.clients import ChatClient, HistoryReader
from goaicore.config import Settings
from goaicore.kafka import ensure_topics
from goaicore.kafka.partitioner import partition_for
from goaicore.maven import MavenUnavailable, cache_root, classpath, java_program_unavailable
from goaicore.records import GameEvent, ReplyStatus
from goaicore.records.avro.api import decode_event
from goaicore.records.avro.schemas import load_manifest
from goaicore.sealing.keys import MasterKeys
from goaicore.store.kafka import KafkaConversationStore
from goaicore.store.sync_store import SyncConversationStore
from goaicore.testing import OpenAIServer
from tests.brokers import SessionBroker
from tests.chat_agent.helpers import ChatWorker, ScriptedLLM, llm_env, snapshot_when, wait_http
from tests.kafka.test_foreign_producers import records_under

pytestmark = [pytest.mark.integration, pytest.mark.apache_kafka]

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples" / "producers"
PYTHON_EXAMPLE = EXAMPLES / "publish_game_event.py"
JAVA_EXAMPLE = EXAMPLES / "java" / "PublishGameEvent.java"
POM = EXAMPLES / "java" / "pom.xml"
SCHEMA = ROOT / "schemas" / "released" / "ConversationEvent" / "v5.avsc"
PARTITIONS = 6
MIN_JAVA = 11  # running a single source file
RUN_TIMEOUT = 180.0


class Deployment:
    """Topics, a store worker answering chat requests from a scripted model, and that
    model's server (its requests recorded)."""

    def __init__(self, settings: Settings, llm: OpenAIServer) -> None:
        self.settings = settings
        self.llm = llm


@pytest.fixture(scope="module")
def deployment(
    request: pytest.FixtureRequest,
    kafka_broker: SessionBroker,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[Deployment]:
    """A deployment whose workers seal (``sealed``: master keys set) or do not
    (``clear``)."""
    folder = tmp_path_factory.mktemp(f"examples-{request.param}")
    keys = {"master_keys": MasterKeys.generate("k1").to_text()} if request.param == "sealed" else {}
    settings = kafka_broker.settings(folder, "x", **keys).with_overrides(partitions=PARTITIONS)
    assert settings.intake == (request.param == "sealed")
    ensure_topics(settings)
    with OpenAIServer(responder=ScriptedLLM()) as llm:
        worker = ChatWorker(settings, **llm_env(llm)).start()
        try:
            wait_http(worker.url)
            yield Deployment(settings, llm)
        finally:
            worker.stop()


def misplaced_id(stem: str) -> str:
    """A conversation id whose murmur2 partition is not the one librdkafka's default
    partitioner (CRC32) gives it: ``ref-ü-1`` is the first for ``ref-ü``."""
    for n in range(1, 1000):
        candidate = f"{stem}-{n}"
        if zlib.crc32(candidate.encode()) % PARTITIONS != partition_for(candidate, PARTITIONS):
            return candidate
    raise AssertionError("no such id")


def java_unavailable() -> str | None:
    """None when the Java example can run here: Java 11+, and Maven or its jars cached."""
    return java_program_unavailable(java_jars_dir(), "kafka-clients and Apache Avro", MIN_JAVA)


def java_jars_dir() -> Path:
    """The example's classpath in goaicore's cache, named by its pom: a changed pom fetches
    again."""
    return cache_root() / f"example-producer-{hashlib.sha256(POM.read_bytes()).hexdigest()[:12]}"


def run_python(
    deployment: Deployment, topic: str, conversation: str, text: str, attributes: dict[str, str]
) -> dict[str, Any]:
    """The Python example, as its own process, without goaicore on its path."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    command = [sys.executable, "-I", str(PYTHON_EXAMPLE)]  # -I: goaicore's checkout not on path
    return run(command, deployment, topic, conversation, text, attributes, env)


def run_java(
    deployment: Deployment, topic: str, conversation: str, text: str, attributes: dict[str, str]
) -> dict[str, Any]:
    """The Java example as a single source file on kafka-clients' and Avro's jars."""
    reason = java_unavailable()
    if reason is not None:
        pytest.skip(f"needs Java and Maven for the Java example: {reason}")
    try:
        jars = classpath(POM, java_jars_dir(), "kafka-clients and Apache Avro", {})
    except MavenUnavailable as err:
        pytest.fail(str(err))
    java = shutil.which("java")
    assert java is not None
    # The JVM decodes its arguments in the locale's charset: a UTF-8 one for the id.
    env = {**os.environ, "LC_ALL": "C.UTF-8"}
    command = [java, "-cp", os.pathsep.join(map(str, jars)), str(JAVA_EXAMPLE)]
    return run(command, deployment, topic, conversation, text, attributes, env)


def run(
    command: list[str],
    deployment: Deployment,
    topic: str,
    conversation: str,
    text: str,
    attributes: dict[str, str],
    env: dict[str, str],
) -> dict[str, Any]:
    arguments = [
        *("--bootstrap-servers", deployment.settings.require_bootstrap()),
        *("--topic", deployment.settings.topic(topic), "--conversation", conversation),
        *("--kind", "check-in", "--text", text, "--source", "game:harrogate"),
        *(a for key, value in attributes.items() for a in ("--attr", f"{key}={value}")),
        *("--schema", str(SCHEMA)),
    ]
    done = subprocess.run(
        [*command, *arguments],
        capture_output=True,
        text=True,
        encoding="utf-8",
        timeout=RUN_TIMEOUT,
        env=env,
        cwd=EXAMPLES,
        stdin=subprocess.DEVNULL,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    [line] = done.stdout.splitlines()
    printed: dict[str, Any] = json.loads(line)
    return printed


@pytest.mark.parametrize("example", ["python", "java"])
@pytest.mark.parametrize(
    ("deployment", "topic"),
    [("sealed", "intake"), ("clear", "events"), ("clear", "intake")],
    indirect=["deployment"],
)
def test_an_example_producers_game_event_is_in_the_history_and_the_models_context(
    deployment: Deployment, topic: str, example: str
) -> None:
    settings = deployment.settings
    conversation = misplaced_id(f"ref-{'ü' if example == 'python' else 'ö'}-{topic}")
    owner = partition_for(conversation, PARTITIONS)
    text = f"Checked in at Harrogate Theatre ({example} to {topic}, Bühne 2)"
    attributes = {"venue": "Harrogate Theatre", "städte": "Harrogate"}
    publish = run_python if example == "python" else run_java
    printed = publish(deployment, topic, conversation, text, attributes)

    # Where the producer put it: the topic asked for, its key's partition (murmur2 of the
    # UTF-8 key), as one record under the key, not forwarded.
    assert (printed["topic"], printed["partition"]) == (settings.topic(topic), owner)
    [sent] = records_under(settings, topic, conversation)
    assert (sent.partition, sent.offset, sent.headers or []) == (owner, printed["offset"], [])
    # Avro's single-object encoding with the vendored release's fingerprint, as recorded.
    fingerprint = bytes.fromhex(load_manifest()["ConversationEvent"]["v5"])
    assert sent.value[:10] == b"\xc3\x01" + fingerprint

    # Folded by its owner: the snapshot, the log in the key's partition, the history.
    snapshot = snapshot_when(settings, conversation, lambda s: s.event_count == 1)
    assert [m.text for m in snapshot.messages] == [text]
    assert snapshot.last_position is not None
    assert snapshot.last_position.partition == owner
    [logged] = records_under(settings, "events", conversation)
    assert logged.partition == owner
    assert (decode_event(logged.value).sealed is not None) == settings.intake  # sealed there
    with HistoryReader(settings) as reader:
        [event] = list(reader.events(conversation))
    assert event.event_id == printed["event_id"]
    assert (event.conversation_id, event.source) == (conversation, "game:harrogate")
    assert event.body == GameEvent(kind="check-in", text=text, attributes=attributes)
    with SyncConversationStore(KafkaConversationStore(settings)) as store:
        read = store.read(conversation)
    assert [(e.event.event_id, e.partition) for e in read.events] == [(event.event_id, owner)]

    # A question about it: the model is told the event, before the question.
    question = "Where did I check in?"
    with ChatClient(settings) as chat:
        reply = chat.ask(conversation, question, timeout=60)
    assert reply.status == ReplyStatus.OK, reply
    [asked] = [b for b in deployment.llm.bodies if isinstance(b, dict) and telling(b, text)]
    told = [m.get("content") for m in asked["messages"]]
    assert told[-1] == question
    assert any(isinstance(content, str) and text in content for content in told[:-1])
    assert records_under(settings, "dead-letters", conversation) == []


def telling(body: dict[str, Any], text: str) -> bool:
    """Whether a model request carries ``text`` (each test's event text is its own)."""
    return text in json.dumps(body.get("messages"), ensure_ascii=False)


def test_the_examples_vendor_the_release_the_readme_names_without_goaicore() -> None:
    """What another service does: nothing of goaicore imported, a released schema file
    read, the one (and the fingerprint) the README's contract names."""
    source = PYTHON_EXAMPLE.read_text(encoding="utf-8")
    assert not re.search(r"^\s*(from|import)\s+goaicore", source, re.MULTILINE)
    vendored = str(SCHEMA.relative_to(ROOT))
    assert vendored in source
    assert vendored in JAVA_EXAMPLE.read_text(encoding="utf-8")
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    contract = readme[readme.index("### Publishing from another language") :]
    contract = contract[: contract.index("\n## ")]
    assert f"`{vendored}`" in contract
    assert f"`{load_manifest()['ConversationEvent']['v5']}`" in contract
