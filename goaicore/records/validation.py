"""Checks on what callers hand to the clients: a clear error before anything is sent."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from goaicore.errors import InputError

MAX_CONVERSATION_ID = 256
MAX_REQUEST_ID = 256

_NOT_IN_IDS = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029\ud800-\udfff]")
"""What a conversation id may not hold: control characters (C0, DEL, C1: NUL among them,
which PostgreSQL text cannot store), line and paragraph separators, and lone surrogates
(no UTF-8 for them). Any other Unicode character is part of the alphabet."""


class InvalidInputError(InputError):
    """A caller's input cannot become a record; nothing was sent."""


def check_conversation_id(value: Any) -> str:
    if not isinstance(value, str):
        raise InvalidInputError(f"conversation_id must be a string, got {type(value).__name__}")
    if not value.strip():
        raise InvalidInputError("conversation_id must not be empty")
    if len(value) > MAX_CONVERSATION_ID:
        raise InvalidInputError(
            f"conversation_id is {len(value)} characters; at most {MAX_CONVERSATION_ID}"
        )
    check_utf8("conversation_id", value)
    problem = conversation_id_problem(value)
    if problem is not None:
        raise InvalidInputError(problem)
    return value


def conversation_id_problem(value: str) -> str | None:
    """Why ``value`` is outside the conversation ids' alphabet (:data:`_NOT_IN_IDS`), or None.

    One rule for callers and for the log's readers: two ids that differ only in such a
    character would otherwise be one where they are stored as text (PostgreSQL turns NUL
    into U+FFFD)."""
    found = _NOT_IN_IDS.search(value)
    if found is None:
        return None
    code = ord(found.group())
    name = " (NUL)" if code == 0 else ""
    return (
        f"conversation_id holds U+{code:04X}{name} at character {found.start()}: "
        "control characters, line separators and lone surrogates are not allowed in ids"
    )


def check_request_id(value: Any) -> str:
    """A request id a caller chose: the key of idempotent retries."""
    if not isinstance(value, str):
        raise InvalidInputError(f"request_id must be a string, got {type(value).__name__}")
    if not value.strip():
        raise InvalidInputError("request_id must not be empty")
    if len(value) > MAX_REQUEST_ID:
        raise InvalidInputError(f"request_id is {len(value)} characters; at most {MAX_REQUEST_ID}")
    return check_utf8("request_id", value)


def check_text(name: str, value: Any, allow_empty: bool = False) -> str:
    if not isinstance(value, str):
        raise InvalidInputError(f"{name} must be a string, got {type(value).__name__}")
    if not allow_empty and not value.strip():
        raise InvalidInputError(f"{name} must not be empty")
    return check_utf8(name, value)


def check_utf8(name: str, value: str) -> str:
    """``value`` when it can be encoded as UTF-8 (as every record's strings are); a lone
    surrogate cannot: a command-line byte that is not UTF-8 arrives as one, and so does
    an unpaired ``\\ud800`` escape in JSON."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as err:
        code = ord(value[err.start])
        what = f"a lone surrogate (\\u{code:04x})"
        if 0xDC80 <= code <= 0xDCFF:
            what += f": the byte 0x{code - 0xDC00:02x}, not UTF-8, as a command line passes it"
        raise InvalidInputError(
            f"{name} is not valid UTF-8 text: character {err.start} is {what}"
        ) from None
    return value


def check_attributes(value: Any) -> dict[str, str]:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise InvalidInputError(f"attributes must be a mapping, got {type(value).__name__}")
    for key, item in value.items():
        if not isinstance(key, str) or not isinstance(item, str):
            raise InvalidInputError(
                f"attributes must map strings to strings; {key!r}: {type(item).__name__}"
            )
        check_utf8("an attribute's name", key)
        check_utf8(f"attribute {key!r}", item)
    return dict(value)


def check_size(what: str, payload: bytes, limit: int) -> bytes:
    if len(payload) > limit:
        raise InvalidInputError(
            f"{what} is {len(payload):,} bytes encoded; the limit is {limit:,} "
            "(GOAICORE_MAX_RECORD_BYTES)"
        )
    return payload
