"""Writer schemas by fingerprint, and the current reader schema per record.

Single-object payloads name their writer schema only by fingerprint, so a reader keeps
every schema that was ever written: all released versions (a release rewritten in place
after it shipped, ``v<N>-original``, as well as ``v<N>``), plus the current one (equal to
the latest release once it is released). Lookup is one dict access per payload.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from goaicore.records.avro.fingerprint import canonical_form, fingerprint_of_canonical
from goaicore.records.avro.schemas import (
    SCHEMA_NAMES,
    SchemaFile,
    load_current,
    load_released,
    parse_release,
)


@dataclass(frozen=True)
class WriterSchema:
    """A schema some payload may have been written with.

    ``release`` names the released version (``v3``; ``v3-original`` for what ``v3`` was
    before it was rewritten in place), or is None when the schema is unreleased;
    ``version`` is its number. ``same_as_reader`` means its canonical form equals the
    reader's, so reading needs no schema resolution (the fast path).
    """

    name: str
    release: str | None
    fingerprint: bytes
    canonical: str
    parsed: Any
    same_as_reader: bool

    @property
    def version(self) -> int | None:
        """The released version's number (3 for ``v3`` and ``v3-original``), or None."""
        return None if self.release is None else parse_release(self.release)[0]

    @property
    def label(self) -> str:
        """E.g. ``ChatReply v1`` or ``ChatReply (unreleased)``, for messages."""
        return f"{self.name} {self.release}" if self.release else f"{self.name} (unreleased)"


class SchemaRegistry:
    """The reader schema of each record and every writer schema it can resolve.

    Build one with ``from_files`` (the ``schemas/`` folder) or, in tests, from any
    reader and writer schemas.
    """

    def __init__(
        self,
        readers: Mapping[str, Any],
        writers: Mapping[str, Iterable[tuple[str, Any]]],
    ) -> None:
        """``readers``: name -> parsed schema; ``writers``: name -> (release, parsed) pairs,
        the release named as its file is (``v2``, ``v3-original``).

        The reader schema is always a writer schema too (it is what we write).
        """
        self._readers: dict[str, Any] = dict(readers)
        self._reader_fingerprints: dict[str, bytes] = {}
        self._writers: dict[bytes, WriterSchema] = {}
        for name, reader in self._readers.items():
            reader_canonical = canonical_form(reader)
            self._reader_fingerprints[name] = fingerprint_of_canonical(reader_canonical)
            # Released versions first, so a current schema equal to a release gets its label.
            released: list[tuple[str | None, Any]] = [*writers.get(name, ())]
            for release, parsed in [*released, (None, reader)]:
                if release is not None:
                    parse_release(release)  # a ValueError for a name that is no release
                canonical = canonical_form(parsed)
                fp = fingerprint_of_canonical(canonical)
                known = self._writers.get(fp)
                if known is not None:
                    if known.name != name:
                        raise ValueError(f"{name} and {known.name} have the same fingerprint")
                    continue
                self._writers[fp] = WriterSchema(
                    name=name,
                    release=release,
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
            writers={
                n: [(f.release, f.parsed) for f in files if f.release is not None]
                for n, files in released.items()
            },
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
