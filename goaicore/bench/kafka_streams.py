"""The peers suite's Kafka Streams app: its jars and its command line.

``java/KafkaStreamsFold.java`` runs as a single source file (no build step) on the jars
of Kafka Streams and Apache Avro, fetched with Maven into goaicore's cache on first use
(:mod:`goaicore.maven`), like Apache Kafka's for the local broker.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from goaicore.kafka.apache.jars import KAFKA_VERSION, require_java
from goaicore.maven import cache_root, cached_classpath, classpath
from goaicore.records.avro.schemas import schemas_dir
from goaicore.settings import Settings

AVRO_VERSION = "1.12.1"
JAVA_DIR = Path(__file__).resolve().parent / "java"
POM = JAVA_DIR / "pom.xml"
PROGRAM = JAVA_DIR / "KafkaStreamsFold.java"
LABEL = f"Kafka Streams {KAFKA_VERSION}"
GUARANTEE = "at-least-once, commit.interval.ms=100"


def jars_dir() -> Path:
    """Where the app's jars are cached, beside Apache Kafka's."""
    return cache_root() / f"kafka-streams-{KAFKA_VERSION}-avro-{AVRO_VERSION}"


def unavailable_reason() -> str | None:
    """None when the app can run here (Java 17+, and ``mvn`` or the cached jars)."""
    try:
        require_java()
    except Exception as err:  # KafkaUnavailable: one line saying why
        return str(err)
    if cached_classpath(jars_dir()) is None and shutil.which("mvn") is None:
        return f"no `mvn` on PATH to fetch the {LABEL} jars"
    return None


def jars() -> list[Path]:
    """The app's runtime classpath, fetched with Maven on first use (MavenUnavailable)."""
    properties = {"kafka.version": KAFKA_VERSION, "avro.version": AVRO_VERSION}
    return classpath(POM, jars_dir(), f"{LABEL} and Apache Avro {AVRO_VERSION}", properties)


def command(settings: Settings, output: str) -> list[str]:
    """The app folding ``settings``' events topic into ``output``, its group and state
    its own under the topic prefix."""
    if settings.bootstrap_servers is None:
        raise ValueError("the Kafka Streams app needs the broker's bootstrap servers")
    return [
        require_java(),
        "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn",
        "-cp",
        ":".join(str(jar) for jar in jars()),
        str(PROGRAM),
        settings.bootstrap_servers,
        settings.topic("events"),
        settings.topic(output),
        f"{settings.topic_prefix}.bench-kafka-streams",
        str(settings.data_dir / "kafka-streams"),
        str(schemas_dir()),
    ]
