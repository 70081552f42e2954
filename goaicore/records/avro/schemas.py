"""Finding and loading the ``.avsc`` files of ``schemas/``.

Layout (see ``schemas/README.md``)::

    schemas/<Name>.avsc                  the current schema: what we write and read with
    schemas/released/<Name>/v<N>.avsc    frozen copies of every released version
    schemas/released/fingerprints.json   their fingerprints, so an edit to a frozen file fails

``schemas/`` lives at the repository root beside ``goaicore/``, the single source of
truth. ``goaicore/records/avro/schemas`` links to it, so the built wheel carries a copy
as package data, found with :mod:`importlib.resources`.
"""

from __future__ import annotations

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

_VERSION_FILE = re.compile(r"^v([1-9][0-9]*)\.avsc$")


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


@dataclass(frozen=True)
class SchemaFile:
    """One ``.avsc`` file: ``version`` is None for the current (possibly unreleased) one."""

    name: str
    version: int | None
    path: Path
    raw: Any
    parsed: Any

    @property
    def label(self) -> str:
        return f"{self.name} v{self.version}" if self.version else f"{self.name} (current)"


def load_file(name: str, version: int | None, path: Path) -> SchemaFile:
    """Read and parse one schema file, checking that it defines the record it is named for."""
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
        parsed = parse_schema(raw)
    except (OSError, ValueError, SchemaParseException) as exc:
        raise SchemaLoadError(f"{path}: {exc}") from exc
    defined = raw.get("name") if isinstance(raw, dict) else None
    if defined != name:
        raise SchemaLoadError(f"{path}: defines record {defined!r}, expected {name!r}")
    return SchemaFile(name=name, version=version, path=path, raw=raw, parsed=parsed)


def load_current(name: str, root: Path | None = None) -> SchemaFile:
    """The current schema of ``name`` (what writers write and readers resolve to)."""
    root = schemas_dir() if root is None else root
    return load_file(name, None, root / f"{name}.avsc")


def load_released(name: str, root: Path | None = None) -> list[SchemaFile]:
    """Every released version of ``name``, oldest first."""
    root = schemas_dir() if root is None else root
    folder = root / "released" / name
    versions: list[tuple[int, Path]] = []
    if folder.is_dir():
        for path in folder.iterdir():
            match = _VERSION_FILE.match(path.name)
            if match:
                versions.append((int(match.group(1)), path))
    return [load_file(name, version, path) for version, path in sorted(versions)]


def manifest_path(root: Path | None = None) -> Path:
    """Where the fingerprints of released versions are recorded."""
    return (schemas_dir() if root is None else root) / "released" / "fingerprints.json"


def load_manifest(root: Path | None = None) -> dict[str, dict[str, str]]:
    """``{name: {"v1": fingerprint hex, ...}}`` as recorded at release time."""
    path = manifest_path(root)
    if not path.is_file():
        return {}
    data: dict[str, dict[str, str]] = json.loads(path.read_text(encoding="utf-8"))
    return data
