"""The typed errors of encoding and decoding.

A consumer must be able to tell *why* a payload failed without parsing messages (the
dead-letter topic records the reason), so ``DecodeError`` carries a machine-readable
``reason``; the message is for people.
"""

from __future__ import annotations

from typing import Final, Literal, get_args

from goaicore.errors import InputError

DecodeReason = Literal[
    "empty",
    "bad-magic",
    "truncated",
    "unknown-fingerprint",
    "wrong-schema",
    "incompatible-schema",
    "invalid-body",
]
"""Why a payload could not be decoded:

- ``empty``: no bytes at all (e.g. a tombstone).
- ``bad-magic``: not the single-object marker ``C3 01``: not one of our records.
- ``truncated``: the payload ends before its header or body does.
- ``unknown-fingerprint``: written with a schema this reader does not have.
- ``wrong-schema``: a valid record of another type (e.g. a ChatReply where an event was
  expected).
- ``incompatible-schema``: the writer's schema is known but cannot be resolved against
  the reader's (e.g. a union branch the reader lacks).
- ``invalid-body``: the body does not decode with its writer schema (corrupt data,
  trailing bytes, invalid UTF-8, out-of-range values).
"""

DECODE_REASONS: Final[tuple[DecodeReason, ...]] = get_args(DecodeReason)


class DecodeError(InputError):
    """A payload that is not a decodable record of the expected type.

    ``reason`` is one of ``DECODE_REASONS``; ``fingerprint`` (hex) and ``schema`` name
    the writer schema when the header was readable.
    """

    def __init__(
        self,
        reason: DecodeReason,
        message: str,
        *,
        fingerprint: str | None = None,
        schema: str | None = None,
    ) -> None:
        super().__init__(f"{reason}: {message}")
        self.reason: DecodeReason = reason
        self.message = message
        self.fingerprint = fingerprint
        self.schema = schema


class EncodeError(InputError):
    """A record that does not fit its schema; raised before any bytes are produced.

    ``problems`` lists every offending field as ``Record.field is <value> ... expected T``.
    """

    def __init__(self, message: str, problems: tuple[str, ...] = ()) -> None:
        detail = "".join(f"\n  - {p}" for p in problems)
        super().__init__(f"{message}{detail}")
        self.message = message
        self.problems = problems
