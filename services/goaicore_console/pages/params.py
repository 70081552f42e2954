"""Query parameters read strictly: a value that does not parse is a clear 400 page."""

from __future__ import annotations

from datetime import UTC, datetime

from aiohttp import web

from goaicore.errors import GoaicoreError, InputError

MAX_TEXT = 500


class BadParameterError(InputError):
    """A query parameter that does not parse; the page says which and why."""


class NothingHereError(GoaicoreError, LookupError):
    """What a page was asked for is not in the projection: a 404 page that says what.

    (Not aiohttp's HTTPNotFound with a reason: a reason phrase goes into the status
    line, where a conversation id with a line break or non-Latin-1 text cannot.)
    """


LARGEST = 2**63 - 1  # PostgreSQL's bigint


def text(request: web.Request, name: str, max_chars: int = MAX_TEXT) -> str | None:
    value = request.query.get(name, "").strip()
    if len(value) > max_chars:
        raise BadParameterError(f"{name}: at most {max_chars} characters")
    if "\x00" in value:
        raise BadParameterError(f"{name}: holds a NUL character")
    return value or None


def integer(request: web.Request, name: str, minimum: int = 0) -> int | None:
    value = text(request, name)
    if value is None:
        return None
    try:
        number = int(value)
    except ValueError:
        raise BadParameterError(f"{name}: {value!r} is not a whole number") from None
    if not minimum <= number <= LARGEST:
        raise BadParameterError(f"{name}: {number} is not between {minimum} and {LARGEST}")
    return number


def moment(request: web.Request, name: str) -> datetime | None:
    """An ISO 8601 time (a browser's datetime-local too); without a zone, UTC."""
    value = text(request, name)
    if value is None:
        return None
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        raise BadParameterError(
            f"{name}: {value!r} is not a time (write it like 2026-11-24T10:30)"
        ) from None
    return parsed if parsed.tzinfo is not None else parsed.replace(tzinfo=UTC)


def flag(request: web.Request, name: str) -> bool:
    return request.query.get(name, "") in ("1", "on", "true", "yes")


def position(request: web.Request, name: str) -> tuple[int, int] | None:
    """``PARTITION:OFFSET``."""
    value = text(request, name)
    if value is None:
        return None
    partition, sep, offset = value.partition(":")
    numbers = (partition, offset)
    if not sep or not all(n.isascii() and n.isdigit() and len(n) <= 18 for n in numbers):
        raise BadParameterError(f"{name}: {value!r} is not PARTITION:OFFSET")
    return int(partition), int(offset)


def conversation_id(request: web.Request) -> str:
    """The conversation a page is about; one PostgreSQL cannot hold (NUL) is in no table."""
    found = request.match_info["conversation_id"]
    if "\x00" in found:
        raise NothingHereError("no conversation with a NUL character in its id is stored")
    return found
