"""Java libraries from Maven Central: resolved once with Maven, then read from a cache.

``classpath(pom, folder, label, properties)`` runs ``mvn`` on a committed ``pom.xml`` the
first time and copies its runtime classpath into ``<folder>/libs`` (the jars listed in
``<folder>/jars.txt``); later calls only read that folder, so repeat runs never touch
the network. Several processes may ask at once: one fetches under a file lock, the
others wait for it and then read the cache. Every folder lives under one cache root
(:func:`cache_root`), outside any checkout: Apache Kafka's jars
(``goaicore.kafka.apache.jars``) and Apache Avro's, which the schema tests run.

A missing ``mvn``, or a failed or slow fetch, raises :class:`MavenUnavailable` with one
line saying so.
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

from goaicore.errors import EXIT_CONFIG, GoaicoreError

DEFAULT_FETCH_TIMEOUT = 600.0
_MANIFEST = "jars.txt"


class MavenUnavailable(GoaicoreError, RuntimeError):
    """Maven could not provide the jars; the message is one line saying why."""

    exit_code = EXIT_CONFIG


def cache_root(env: Mapping[str, str] | None = None) -> Path:
    """Where the jars of every version are kept: outside any checkout, shared by them."""
    env = os.environ if env is None else env
    if env.get("GOAICORE_KAFKA_CACHE"):
        return Path(env["GOAICORE_KAFKA_CACHE"]).expanduser()
    base = env.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "goaicore"


def fetch_timeout() -> float:
    """Seconds a first fetch may take: ``GOAICORE_KAFKA_FETCH_TIMEOUT``, else 600."""
    raw = os.environ.get("GOAICORE_KAFKA_FETCH_TIMEOUT")
    try:
        return float(raw) if raw else DEFAULT_FETCH_TIMEOUT
    except ValueError:
        raise MavenUnavailable(
            f"GOAICORE_KAFKA_FETCH_TIMEOUT={raw!r}: must be a number of seconds"
        ) from None


def cached_classpath(folder: Path) -> list[Path] | None:
    """The classpath cached in ``folder``, or None when it was never fetched whole."""
    try:
        names = (folder / _MANIFEST).read_text().split()
    except OSError:
        return None
    jars = [folder / "libs" / name for name in names]
    return jars if jars and all(jar.is_file() for jar in jars) else None


def java_program_unavailable(folder: Path, label: str, min_java: int = 11) -> str | None:
    """None when a Java program run as a single source file (Java ``min_java``+) on the
    jars cached in ``folder`` can run here: Java is on PATH, and the jars are cached or
    ``mvn`` can fetch them; else one line saying why (``label``: what they are)."""
    java = shutil.which("java")
    if java is None:
        return "no `java` on PATH"
    answer = subprocess.run(
        [java, "-version"], capture_output=True, text=True, timeout=60, check=False
    )
    match = re.search(r'version "(\d+)', answer.stderr + answer.stdout)
    if match is None or int(match.group(1)) < min_java:
        return f"java on PATH is not Java {min_java}+ (it says {answer.stderr.strip()[:80]!r})"
    if cached_classpath(folder) is None and shutil.which("mvn") is None:
        return f"no `mvn` on PATH to fetch {label}"
    return None


def classpath(
    pom: Path,
    folder: Path,
    label: str,
    properties: Mapping[str, str],
    timeout: float | None = None,
    progress: bool = True,
) -> list[Path]:
    """The runtime classpath of ``pom`` (with ``-D`` ``properties``), cached in ``folder``.

    ``label`` names what is fetched in messages (``Apache Kafka 3.9.1``).
    """
    jars = cached_classpath(folder)
    if jars is not None:
        return jars
    folder.mkdir(parents=True, exist_ok=True)
    with _locked(folder / ".lock"):
        jars = cached_classpath(folder)
        if jars is not None:
            return jars
        _fetch(pom, folder, label, properties, timeout or fetch_timeout(), progress)
        jars = cached_classpath(folder)
    if jars is None:
        raise MavenUnavailable(f"Maven finished but left no jars in {folder / 'libs'}")
    return jars


def _fetch(
    pom: Path,
    folder: Path,
    label: str,
    properties: Mapping[str, str],
    timeout: float,
    progress: bool,
) -> None:
    mvn = shutil.which("mvn")
    if mvn is None:
        raise MavenUnavailable(f"no `mvn` on PATH to fetch the {label} jars")
    if progress:
        print(f"fetching {label} jars with Maven into {folder} (once) ...", flush=True)
    staging = Path(tempfile.mkdtemp(prefix="libs-", dir=folder))
    command = [
        mvn,
        "--batch-mode",
        "--quiet",
        "--no-transfer-progress",
        "-f",
        str(pom),
        *(f"-D{key}={value}" for key, value in properties.items()),
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
        raise MavenUnavailable(
            f"fetching {label} with Maven took over {timeout:.0f} s; "
            "check access to Maven Central (GOAICORE_KAFKA_FETCH_TIMEOUT sets the limit)"
        ) from None
    if answer.returncode != 0:
        shutil.rmtree(staging, ignore_errors=True)
        raise MavenUnavailable(
            f"Maven could not fetch {label} (exit {answer.returncode}): "
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
