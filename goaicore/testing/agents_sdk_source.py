"""The OpenAI Agents SDK's own sources (its sdist, tests included), fetched once from PyPI.

The first call runs ``pip download --no-binary :all: --no-deps openai-agents==<version>``
and extracts the archive into ``<cache>/openai-agents-<version>/openai_agents-<version>``,
beside Apache Kafka's jars (``goaicore.kafka.apache.jars.cache_root``: ``GOAICORE_KAFKA_CACHE``,
else ``$XDG_CACHE_HOME/goaicore``); later calls only read that folder. Several processes
may ask at once: one fetches under a file lock, the others wait and read the cache. A
failed or slow download raises :class:`SdkSourcesUnavailable` with one line saying why.
"""

from __future__ import annotations

import contextlib
import fcntl
import shutil
import subprocess
import sys
import tarfile
import tempfile
from collections.abc import Iterator, Mapping
from pathlib import Path

from goaicore.errors import GoaicoreError
from goaicore.kafka.apache.jars import cache_root

SDK_DISTRIBUTION = "openai-agents"
SDK_VERSION = "0.24.0"
DEFAULT_FETCH_TIMEOUT = 300.0
_NETWORK = "connection"  # in pip's retry warnings: "after connection broken by ..."


class SdkSourcesUnavailable(GoaicoreError, RuntimeError):
    """The SDK's sources could not be fetched; the message is one line saying why."""


def sources_dir(version: str = SDK_VERSION, env: Mapping[str, str] | None = None) -> Path:
    """Where ``version``'s sdist is (or will be) extracted: its root, holding ``tests/``."""
    return cache_root(env) / f"{SDK_DISTRIBUTION}-{version}" / f"openai_agents-{version}"


def sdk_sources(
    version: str = SDK_VERSION,
    *,
    env: Mapping[str, str] | None = None,
    timeout: float = DEFAULT_FETCH_TIMEOUT,
) -> Path:
    """The root of the extracted sdist of openai-agents ``version``, downloaded on first use."""
    root = sources_dir(version, env)
    if _complete(root):
        return root
    folder = root.parent
    folder.mkdir(parents=True, exist_ok=True)
    with _locked(folder / ".lock"):
        if not _complete(root):
            _fetch(version, root, timeout)
    return root


def _complete(root: Path) -> bool:
    # The extracted tree is renamed into place whole, so its presence means a full fetch.
    return (root / "tests" / "conftest.py").is_file() and (root / "pyproject.toml").is_file()


def _fetch(version: str, root: Path, timeout: float) -> None:
    requirement = f"{SDK_DISTRIBUTION}=={version}"
    print(f"fetching the sources of {requirement} from PyPI into {root.parent} (once) ...")
    staging = Path(tempfile.mkdtemp(prefix="fetch-", dir=root.parent))
    try:
        command = [
            sys.executable,
            "-m",
            "pip",
            "download",
            "--no-binary",
            ":all:",
            "--no-deps",
            "--disable-pip-version-check",
            "--no-input",
            "--dest",
            str(staging),
            requirement,
        ]
        try:
            answer = subprocess.run(
                command,
                capture_output=True,
                text=True,
                timeout=timeout,
                stdin=subprocess.DEVNULL,
                check=False,
            )
        except subprocess.TimeoutExpired:
            raise SdkSourcesUnavailable(
                f"downloading the sources of {requirement} from PyPI took over {timeout:.0f} s"
            ) from None
        if answer.returncode != 0:
            raise SdkSourcesUnavailable(
                f"pip could not download the sources of {requirement} from PyPI "
                f"(exit {answer.returncode}): {_first_error(answer.stdout + answer.stderr)}"
            )
        archives = sorted(staging.glob("*.tar.gz"))
        if len(archives) != 1:
            raise SdkSourcesUnavailable(
                f"pip downloaded {requirement} but left no single sdist in {staging}: "
                f"{sorted(p.name for p in staging.iterdir())}"
            )
        with tarfile.open(archives[0]) as archive:
            archive.extractall(staging, filter="data")
        extracted = staging / root.name
        if not _complete(extracted):
            raise SdkSourcesUnavailable(
                f"the sdist of {requirement} has no {root.name}/tests/conftest.py: "
                "it no longer ships its tests"
            )
        shutil.rmtree(root, ignore_errors=True)  # a partial tree someone left behind
        extracted.rename(root)
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def _first_error(output: str) -> str:
    """pip's first error line, and why the index may be out of reach when it seems so."""
    lines = [line.strip() for line in output.splitlines() if line.strip()]
    errors = [line for line in lines if line.startswith("ERROR:")]
    message = (errors or lines or ["no output"])[0][:200]
    network = [line for line in lines if line.startswith("WARNING:") and _NETWORK in line]
    if network:
        message += f"; is PyPI reachable? pip said: {network[-1][:200]}"
    elif "(from versions: none)" in output:
        message += "; no index listed any version: is PyPI reachable?"
    return message


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    with open(path, "w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)
