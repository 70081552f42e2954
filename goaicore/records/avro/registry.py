"""Writer schemas by fingerprint, and the current reader schema per record.

Single-object payloads name their writer schema only by fingerprint, so a reader keeps
every schema that was ever written: all released versions, plus the current one (equal
to the latest release once it is released). Lookup is one dict access per payload.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from goaicore.records.avro.fingerprint import canonical_form, fingerprint_of_canonical
from goaicore.records.avro.schemas import SCHEMA_NAMES, SchemaFile, load_current, load_released


@dataclass(frozen=True)
class WriterSchema:
    """A schema some payload may have been written with.

    ``version`` is the released version, or None when the schema is unreleased.
    ``same_as_reader`` means its canonical form equals the reader's, so reading needs no
    schema resolution (the fast path).
    """

    name: str
    version: int | None
    fingerprint: bytes
    canonical: str
    parsed: Any
    same_as_reader: bool

    @property
    def label(self) -> str:
        """E.g. ``ChatReply v1`` or ``ChatReply (unreleased)``, for messages."""
        return f"{self.name} v{self.version}" if self.version else f"{self.name} (unreleased)"


class SchemaRegistry:
    """The reader schema of each record and every writer schema it can resolve.

    Build one with ``from_files`` (the ``schemas/`` folder) or, in tests, from any
    reader and writer schemas.
    """

    def __init__(
        self,
        readers: Mapping[str, Any],
        writers: Mapping[str, Iterable[tuple[int | None, Any]]],
    ) -> None:
        """``readers``: name -> parsed schema; ``writers``: name -> (version, parsed) pairs.

        The reader schema is always a writer schema too (it is what we write).
        """
        self._readers: dict[str, Any] = dict(readers)
        self._reader_fingerprints: dict[str, bytes] = {}
        self._writers: dict[bytes, WriterSchema] = {}
        for name, reader in self._readers.items():
            reader_canonical = canonical_form(reader)
            self._reader_fingerprints[name] = fingerprint_of_canonical(reader_canonical)
            # Released versions first, so a current schema equal to a release gets its label.
            for version, parsed in [*writers.get(name, ()), (None, reader)]:
                canonical = canonical_form(parsed)
                fp = fingerprint_of_canonical(canonical)
                known = self._writers.get(fp)
                if known is not None:
                    if known.name != name:
                        raise ValueError(f"{name} and {known.name} have the same fingerprint")
                    continue
                self._writers[fp] = WriterSchema(
                    name=name,
                    version=version,
                    fingerprint=fp,
                    canonical=canonical,
                    parsed=parsed,
                    same_as_reader=canonical == reader_canonical,
                )

    @classmethod
    def from_files(cls, root: Path | None = None) -> SchemaRegistry:
        """The registry of the ``schemas/`` folder: current readers, every release."""
        current: dict[str, SchemaFile] = {n: load_current(n, root) for n in SCHEMA_NAMES}
        released = {n: load_released(n, root) for n in SCHEMA_NAMES}
        return cls(
            readers={n: f.parsed for n, f in current.items()},
            writers={n: [(f.version, f.parsed) for f in files] for n, files in released.items()},
        )

    @property
    def names(self) -> tuple[str, ...]:
        """The record names this registry reads."""
        return tuple(self._readers)

    def reader(self, name: str) -> Any:
        """The parsed current (reader and writer) schema of ``name``."""
        return self._readers[name]

    def current(self, name: str) -> WriterSchema:
        """The writer entry of the current schema of ``name``: what encoders write."""
        return self._writers[self._reader_fingerprints[name]]

    def writer(self, fingerprint: bytes) -> WriterSchema | None:
        """The writer schema with this fingerprint, or None when unknown."""
        return self._writers.get(fingerprint)

    def writers(self, name: str | None = None) -> list[WriterSchema]:
        """Every writer schema (of ``name`` when given), in registration order."""
        return [w for w in self._writers.values() if name is None or w.name == name]
