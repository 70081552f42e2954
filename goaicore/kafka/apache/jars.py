"""Apache Kafka's jars: resolved once with Maven, then read from a per-version cache.

The version is pinned here and nowhere else (deploy/compose.yaml's image tag is
checked against it by a test). The first call runs ``mvn`` on the committed
``pom.xml`` and copies the runtime classpath into
``<cache>/kafka-<version>/libs`` (:mod:`goaicore.maven`); later calls only read that
folder, so repeat runs never touch the network. A missing or too old ``java`` or
``mvn``, or a failed or slow fetch, raises :class:`KafkaUnavailable` with one line
saying so.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from collections.abc import Mapping
from pathlib import Path

from goaicore.errors import EXIT_CONFIG, BrokerError
from goaicore.maven import MavenUnavailable, cache_root, cached_classpath, classpath

KAFKA_VERSION = "3.9.1"
MIN_JAVA = 17
POM = Path(__file__).with_name("pom.xml")


class KafkaUnavailable(BrokerError, RuntimeError):
    """Apache Kafka cannot run here; the message is one line saying why."""

    exit_code = EXIT_CONFIG


def java_major(java: str = "java") -> int:
    """The major version of ``java`` on PATH; KafkaUnavailable when there is none."""
    path = shutil.which(java)
    if path is None:
        raise KafkaUnavailable(f"no `{java}` on PATH: Apache Kafka needs Java {MIN_JAVA}+")
    try:
        answer = subprocess.run(
            [path, "-version"], capture_output=True, text=True, timeout=30, check=False
        )
    except (OSError, subprocess.TimeoutExpired) as err:
        raise KafkaUnavailable(f"`{path} -version` failed: {err}") from None
    match = re.search(r'version "(\d+)(?:\.(\d+))?', answer.stderr + answer.stdout)
    if match is None:
        raise KafkaUnavailable(f"`{path} -version` printed no version it could read")
    major = int(match.group(1))
    return int(match.group(2) or 0) if major == 1 else major  # "1.8.0" is Java 8


def require_java() -> str:
    """The ``java`` executable, checked to be Java 17 or newer."""
    major = java_major()
    if major < MIN_JAVA:
        raise KafkaUnavailable(f"java on PATH is Java {major}; Apache Kafka here needs {MIN_JAVA}+")
    return str(shutil.which("java"))


def unavailable_reason() -> str | None:
    """None when Apache Kafka can run here (java 17+, and mvn or cached jars), else why not."""
    try:
        require_java()
        if cached_jars() is None and shutil.which("mvn") is None:
            raise KafkaUnavailable("no `mvn` on PATH to fetch the Apache Kafka jars")
    except KafkaUnavailable as err:
        return str(err)
    return None


def prepared_or_reason() -> str | None:
    """None once Apache Kafka can run here, its jars fetched now if need be; else why not.

    For callers that start it later and want the first fetch, and its errors, up front.
    """
    reason = unavailable_reason()
    if reason is None:
        try:
            kafka_jars()
        except KafkaUnavailable as err:
            reason = str(err)
    return reason


def version_dir(version: str = KAFKA_VERSION, env: Mapping[str, str] | None = None) -> Path:
    return cache_root(env) / f"kafka-{version}"


def cached_jars(version: str = KAFKA_VERSION) -> list[Path] | None:
    """The cached classpath of ``version``, or None when it was never fetched whole."""
    return cached_classpath(version_dir(version))


def kafka_jars(
    version: str = KAFKA_VERSION, timeout: float | None = None, progress: bool = True
) -> list[Path]:
    """The classpath of Apache Kafka ``version``, fetching it with Maven on first use.

    Several processes may ask at once: one fetches under a file lock, the others
    wait for it and then read the cache.
    """
    try:
        return classpath(
            POM,
            version_dir(version),
            f"Apache Kafka {version}",
            {"kafka.version": version},
            timeout=timeout,
            progress=progress,
        )
    except MavenUnavailable as err:
        raise KafkaUnavailable(str(err)) from None


__all__ = [
    "KAFKA_VERSION",
    "MIN_JAVA",
    "POM",
    "KafkaUnavailable",
    "cache_root",
    "cached_jars",
    "java_major",
    "kafka_jars",
    "prepared_or_reason",
    "require_java",
    "unavailable_reason",
    "version_dir",
]
