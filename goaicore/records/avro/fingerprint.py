"""CRC-64-AVRO (Rabin) fingerprints of schemas, as the single-object encoding uses them.

The fingerprint is taken over the schema's Parsing Canonical Form, so docs, defaults,
aliases and whitespace do not change it (Avro specification, "Schema Fingerprints").
fastavro implements both the canonical form and the Rabin fingerprint; the tests check
them against the specification's published vectors.
"""

from __future__ import annotations

from typing import Any

from fastavro.schema import fingerprint as _fastavro_fingerprint
from fastavro.schema import to_parsing_canonical_form

FINGERPRINT_SIZE = 8


def canonical_form(schema: Any) -> str:
    """The Parsing Canonical Form of a schema (a JSON-like object, raw or parsed)."""
    return str(to_parsing_canonical_form(schema))


def fingerprint_of_canonical(canonical: str) -> bytes:
    """The CRC-64-AVRO fingerprint of a canonical form, little-endian, as on the wire."""
    # fastavro returns the hex of the 8 little-endian bytes: exactly the wire layout.
    return bytes.fromhex(_fastavro_fingerprint(canonical, "CRC-64-AVRO"))


def fingerprint(schema: Any) -> bytes:
    """The 8-byte CRC-64-AVRO fingerprint of a schema, little-endian, as on the wire."""
    return fingerprint_of_canonical(canonical_form(schema))


def fingerprint_int(schema: Any) -> int:
    """The fingerprint as the signed 64-bit integer Java's ``SchemaNormalization`` gives."""
    return int.from_bytes(fingerprint(schema), "little", signed=True)
