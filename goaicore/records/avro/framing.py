"""The Avro single-object encoding's header: ``C3 01`` + 8-byte fingerprint + body.

Every payload names its writer schema, so a reader needs no schema registry service and
an undecodable payload can be told apart from a foreign one (Avro specification,
"Single-object encoding").
"""

from __future__ import annotations

from goaicore.records.avro.errors import DecodeError
from goaicore.records.avro.fingerprint import FINGERPRINT_SIZE

MAGIC = b"\xc3\x01"
HEADER_SIZE = len(MAGIC) + FINGERPRINT_SIZE


def header(fingerprint: bytes) -> bytes:
    """The header announcing a body written with the schema of ``fingerprint``."""
    if len(fingerprint) != FINGERPRINT_SIZE:
        raise ValueError(f"a fingerprint has {FINGERPRINT_SIZE} bytes, got {len(fingerprint)}")
    return MAGIC + fingerprint


def read_header(data: bytes | bytearray | memoryview | None) -> bytes:
    """The writer fingerprint of a single-object payload; DecodeError when there is none.

    Raises TypeError for something that is not bytes at all (a programming error, not
    bad data).
    """
    if data is None:
        raise DecodeError("empty", "no payload (a tombstone?)")
    if not isinstance(data, bytes | bytearray | memoryview):
        raise TypeError(f"expected bytes, got {type(data).__name__}")
    if len(data) == 0:
        raise DecodeError("empty", "the payload has no bytes")
    if len(data) < len(MAGIC):
        raise DecodeError("truncated", f"{len(data)} byte(s), shorter than the marker C3 01")
    if bytes(data[: len(MAGIC)]) != MAGIC:
        raise DecodeError(
            "bad-magic",
            f"starts with {bytes(data[:2]).hex(' ').upper()}, not the single-object marker C3 01",
        )
    if len(data) < HEADER_SIZE:
        raise DecodeError(
            "truncated", f"{len(data)} bytes, shorter than the {HEADER_SIZE}-byte header"
        )
    return bytes(data[len(MAGIC) : HEADER_SIZE])
