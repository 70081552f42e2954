"""Apache Kafka's jars: resolved once with Maven, then read from a per-version cache.

The version is pinned here and nowhere else (deploy/compose.yaml's image tag is
checked against it by a test). The first call runs ``mvn`` on the committed
``pom.xml`` and copies the runtime classpath into
``<cache>/kafka-<version>/libs``; later calls only read that folder, so repeat
runs never touch the network. A missing or too old ``java`` or ``mvn``, or a
failed or slow fetch, raises :class:`KafkaUnavailable` with one line saying so.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Iterator, Mapping
from pathlib import Path

from goaicore.errors import EXIT_CONFIG, BrokerError

KAFKA_VERSION = "3.9.1"
MIN_JAVA = 17
POM = Path(__file__).with_name("pom.xml")
DEFAULT_FETCH_TIMEOUT = 600.0
_MANIFEST = "jars.txt"


class KafkaUnavailable(BrokerError, RuntimeError):
    """Apache Kafka cannot run here; the message is one line saying why."""

    exit_code = EXIT_CONFIG


def cache_root(env: Mapping[str, str] | None = None) -> Path:
    """Where the jars of every version are kept: outside any checkout, shared by them."""
    env = os.environ if env is None else env
    if env.get("GOAICORE_KAFKA_CACHE"):
        return Path(env["GOAICORE_KAFKA_CACHE"]).expanduser()
    base = env.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "goaicore"


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
    folder = version_dir(version)
    try:
        names = (folder / _MANIFEST).read_text().split()
    except OSError:
        return None
    jars = [folder / "libs" / name for name in names]
    return jars if jars and all(jar.is_file() for jar in jars) else None


def kafka_jars(
    version: str = KAFKA_VERSION, timeout: float | None = None, progress: bool = True
) -> list[Path]:
    """The classpath of Apache Kafka ``version``, fetching it with Maven on first use.

    Several processes may ask at once: one fetches under a file lock, the others
    wait for it and then read the cache.
    """
    jars = cached_jars(version)
    if jars is not None:
        return jars
    folder = version_dir(version)
    folder.mkdir(parents=True, exist_ok=True)
    with _locked(folder / ".lock"):
        jars = cached_jars(version)
        if jars is not None:
            return jars
        _fetch(version, folder, timeout or _fetch_timeout(), progress)
        jars = cached_jars(version)
    if jars is None:
        raise KafkaUnavailable(f"Maven finished but left no jars in {folder / 'libs'}")
    return jars


def _fetch_timeout() -> float:
    raw = os.environ.get("GOAICORE_KAFKA_FETCH_TIMEOUT")
    try:
        return float(raw) if raw else DEFAULT_FETCH_TIMEOUT
    except ValueError:
        raise KafkaUnavailable(
            f"GOAICORE_KAFKA_FETCH_TIMEOUT={raw!r}: must be a number of seconds"
        ) from None


def _fetch(version: str, folder: Path, timeout: float, progress: bool) -> None:
    mvn = shutil.which("mvn")
    if mvn is None:
        raise KafkaUnavailable("no `mvn` on PATH to fetch the Apache Kafka jars")
    if progress:
        print(
            f"fetching Apache Kafka {version} jars with Maven into {folder} (once) ...",
            flush=True,
        )
    staging = Path(tempfile.mkdtemp(prefix="libs-", dir=folder))
    command = [
        mvn,
        "--batch-mode",
        "--quiet",
        "--no-transfer-progress",
        "-f",
        str(POM),
        f"-Dkafka.version={version}",
        "-Dmaven.wagon.rto=60000",
        "-Dmaven.wagon.http.retryHandler.count=3",
        "org.apache.maven.plugins:maven-dependency-plugin:3.6.1:copy-dependencies",
        "-DincludeScope=runtime",
        f"-DoutputDirectory={staging}",
    ]
    try:
        answer = subprocess.run(
            command,
            capture_output=True,
            text=True,
            timeout=timeout,
            stdin=subprocess.DEVNULL,
            check=False,
            cwd=folder,
        )
    except subprocess.TimeoutExpired:
        shutil.rmtree(staging, ignore_errors=True)
        raise KafkaUnavailable(
            f"fetching Apache Kafka {version} with Maven took over {timeout:.0f} s; "
            "check access to Maven Central (GOAICORE_KAFKA_FETCH_TIMEOUT sets the limit)"
        ) from None
    if answer.returncode != 0:
        shutil.rmtree(staging, ignore_errors=True)
        raise KafkaUnavailable(
            f"Maven could not fetch Apache Kafka {version} (exit {answer.returncode}): "
            f"{_first_error(answer.stdout + answer.stderr)}"
        )
    libs = folder / "libs"
    shutil.rmtree(libs, ignore_errors=True)
    staging.rename(libs)
    names = sorted(p.name for p in libs.glob("*.jar"))
    (folder / _MANIFEST).write_text("\n".join(names) + "\n")


def _first_error(output: str) -> str:
    for line in output.splitlines():
        if "[ERROR]" in line:
            return line.replace("[ERROR]", "").strip()[:300]
    lines = [line for line in output.splitlines() if line.strip()]
    return lines[-1][:300] if lines else "no output"


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    with open(path, "w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)
