"""Finding and loading the ``.avsc`` files of ``schemas/``.

Layout (see ``schemas/README.md``)::

    schemas/<Name>.avsc                        the current schema: what we write and read with
    schemas/released/<Name>/v<N>.avsc          frozen copies of every released version
    schemas/released/<Name>/v<N>-original.avsc what v<N> first was, where it was rewritten
                                               after its release (still read, never written)
    schemas/released/fingerprints.json         their fingerprints, so an edit to a frozen file fails
    schemas/released/SHA256SUMS                their bytes, so even an edit to a doc fails

``schemas/`` lives at the repository root beside ``goaicore/``, the single source of
truth. ``goaicore/records/avro/schemas`` links to it, so the built wheel carries a copy
as package data, found with :mod:`importlib.resources`.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from dataclasses import dataclass
from importlib.resources import files
from pathlib import Path
from typing import Any

from fastavro import parse_schema
from fastavro.schema import SchemaParseException

from goaicore.errors import ConfigError

SCHEMAS_DIR_ENV = "GOAICORE_SCHEMAS_DIR"

# The records of the wire contract, one current file each.
SCHEMA_NAMES: tuple[str, ...] = (
    "ConversationEvent",
    "ChatRequest",
    "ChatReply",
    "ConversationSnapshot",
    "ConversationKey",
    "ReplyChunk",
)

_RELEASE = re.compile(r"^v([1-9][0-9]*)(-original)?$")
ORIGINAL_SUFFIX = "-original"


class SchemaLoadError(ConfigError):
    """The schema folder or one of its files is missing or invalid (a deployment fault)."""


def schemas_dir() -> Path:
    """The folder holding the schemas.

    ``GOAICORE_SCHEMAS_DIR`` when set (and then only it: a wrong setting is an error, not
    a silent fallback); otherwise the package's own (the checkout's ``schemas/`` in an
    editable install).
    """
    marker = f"{SCHEMA_NAMES[0]}.avsc"
    configured = os.environ.get(SCHEMAS_DIR_ENV)
    if configured:
        if not (Path(configured) / marker).is_file():
            raise SchemaLoadError(f"{SCHEMAS_DIR_ENV}={configured} holds no {marker}")
        return Path(configured)
    packaged = Path(str(files(__package__ or "goaicore.records.avro") / "schemas"))
    if (packaged / marker).is_file():
        return packaged
    raise SchemaLoadError(
        f"the package holds no Avro schemas (looked in {packaged}); reinstall goaicore or "
        f"set {SCHEMAS_DIR_ENV} to the folder holding {marker}"
    )


def parse_release(release: str) -> tuple[int, bool]:
    """``"v3"`` -> (3, False); ``"v3-original"`` -> (3, True); ValueError for anything else.

    A release is named by its version, and ``v<N>-original`` is the text ``v<N>`` had when
    it was first released, kept where ``v<N>.avsc`` was later rewritten in place (a
    different fingerprint): bytes written by it must still decode.
    """
    match = _RELEASE.match(release)
    if match is None:
        raise ValueError(f"{release!r} names no release (v<N> or v<N>{ORIGINAL_SUFFIX})")
    return int(match.group(1)), match.group(2) is not None


def release_name(version: int, original: bool = False) -> str:
    """The name of a release: ``v3``, or ``v3-original``."""
    return f"v{version}{ORIGINAL_SUFFIX if original else ''}"


@dataclass(frozen=True)
class SchemaFile:
    """One ``.avsc`` file: ``version`` is None for the current (possibly unreleased) one.

    ``original`` marks ``v<N>-original.avsc``: what ``v<N>`` was before it was rewritten.
    """

    name: str
    version: int | None
    path: Path
    raw: Any
    parsed: Any
    original: bool = False

    @property
    def release(self) -> str | None:
        """``v3``, ``v3-original``, or None for the current file."""
        return None if self.version is None else release_name(self.version, self.original)

    @property
    def label(self) -> str:
        return f"{self.name} {self.release}" if self.release else f"{self.name} (current)"


def load_file(name: str, version: int | None, path: Path, original: bool = False) -> SchemaFile:
    """Read and parse one schema file, checking that it defines the record it is named for."""
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
        parsed = parse_schema(raw)
    except (OSError, ValueError, SchemaParseException) as exc:
        raise SchemaLoadError(f"{path}: {exc}") from exc
    defined = raw.get("name") if isinstance(raw, dict) else None
    if defined != name:
        raise SchemaLoadError(f"{path}: defines record {defined!r}, expected {name!r}")
    return SchemaFile(
        name=name, version=version, path=path, raw=raw, parsed=parsed, original=original
    )


def load_current(name: str, root: Path | None = None) -> SchemaFile:
    """The current schema of ``name`` (what writers write and readers resolve to)."""
    root = schemas_dir() if root is None else root
    return load_file(name, None, root / f"{name}.avsc")


def load_released(name: str, root: Path | None = None) -> list[SchemaFile]:
    """Every released version of ``name`` in the order they were released, oldest first.

    ``v<N>-original`` comes just before ``v<N>`` (it was released first), so the last one
    is always the latest release.
    """
    root = schemas_dir() if root is None else root
    folder = root / "released" / name
    found: list[tuple[int, bool, Path]] = []
    if folder.is_dir():
        for path in folder.glob("*.avsc"):
            try:
                version, original = parse_release(path.stem)
            except ValueError:
                continue
            found.append((version, not original, path))
    return [
        load_file(name, version, path, original=not final) for version, final, path in sorted(found)
    ]


def manifest_path(root: Path | None = None) -> Path:
    """Where the fingerprints of released versions are recorded."""
    return (schemas_dir() if root is None else root) / "released" / "fingerprints.json"


def load_manifest(root: Path | None = None) -> dict[str, dict[str, str]]:
    """``{name: {"v1": fingerprint hex, ...}}`` as recorded at release time.

    Keyed by release name, so a rewritten release has both ``v<N>`` and ``v<N>-original``.
    """
    path = manifest_path(root)
    if not path.is_file():
        return {}
    data: dict[str, dict[str, str]] = json.loads(path.read_text(encoding="utf-8"))
    return data


def sums_path(root: Path | None = None) -> Path:
    """Where the SHA-256 of every released file is recorded (``sha256sum -c`` reads it)."""
    return (schemas_dir() if root is None else root) / "released" / "SHA256SUMS"


def file_sha256(path: Path) -> str:
    """The SHA-256 of a file's bytes, as hex."""
    return hashlib.sha256(path.read_bytes()).hexdigest()


def load_sums(root: Path | None = None) -> dict[str, str]:
    """``{"<Name>/v<N>.avsc": sha256 hex}``: the bytes of each file when it was released.

    The file is in ``sha256sum``'s format (``<hex>  <path>``, paths relative to
    ``released/``), so ``cd schemas/released && sha256sum -c SHA256SUMS`` checks it too.
    """
    path = sums_path(root)
    if not path.is_file():
        return {}
    sums: dict[str, str] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            digest, _, name = line.partition("  ")
            sums[name] = digest
    return sums


def write_sums(sums: dict[str, str], root: Path | None = None) -> None:
    """Write ``SHA256SUMS``, one line per file in path order."""
    lines = [f"{digest}  {name}\n" for name, digest in sorted(sums.items())]
    sums_path(root).write_text("".join(lines), encoding="utf-8")
