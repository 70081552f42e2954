"""Request bodies: a JSON object with known fields only, each checked for its type.

An unknown field is refused, named, rather than ignored: a misspelt ``request_id``
silently dropped would turn a safe retry into a second LLM turn.
"""

from __future__ import annotations

import json
import re
from collections.abc import Collection, Mapping
from datetime import datetime
from typing import Any

from goaicore.errors import InputError
from goaicore.records.validation import (
    check_attributes,
    check_request_id,
    check_text,
    check_utf8,
)
from goaicore_store.http.errors import ApiError

MESSAGE_FIELDS = ("text", "system", "tools", "model", "timeout", "request_id")
EVENT_FIELDS = ("text", "type", "kind", "attributes")


def json_object(raw: bytes, fields: Collection[str]) -> dict[str, Any]:
    """The body as a JSON object holding only ``fields``, or a 400 saying what is wrong."""
    try:
        body = json.loads(raw)
    except (ValueError, RecursionError) as err:
        raise ApiError(400, f"the body is not valid JSON: {err}") from None
    if not isinstance(body, dict):
        raise ApiError(400, "the body must be a JSON object")
    unknown = sorted(set(body) - set(fields))
    if unknown:
        names = ", ".join(repr(name) for name in unknown)
        raise ApiError(
            400,
            f"unknown field {names}; the fields are {', '.join(fields)}",
            field=unknown[0],
        )
    return body


def text(body: Mapping[str, Any], name: str) -> str:
    if name not in body:
        raise ApiError(400, f"{name} is missing", field=name)
    checked: str = _checked(name, check_text, body[name])
    return checked


def optional_text(body: Mapping[str, Any], name: str) -> str | None:
    value = body.get(name)
    if value is None:
        return None
    if not isinstance(value, str):
        raise ApiError(400, f"{name} must be a string, got {type(value).__name__}", field=name)
    checked: str = _checked(name, check_utf8, value)
    return checked


def optional_request_id(body: Mapping[str, Any]) -> str | None:
    value = body.get("request_id")
    return (
        None if value is None else _checked("request_id", lambda _, v: check_request_id(v), value)
    )


def number(body: Mapping[str, Any], name: str, default: float) -> float:
    value = body.get(name, default)
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ApiError(400, f"{name} must be a number, got {type(value).__name__}", field=name)
    return float(value)


def names(body: Mapping[str, Any], name: str) -> list[str]:
    value = body.get(name, [])
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise ApiError(400, f"{name} must be a list of tool names", field=name)
    return value


def attributes(body: Mapping[str, Any], name: str) -> dict[str, str]:
    checked: dict[str, str] = _checked(name, lambda _, v: check_attributes(v), body.get(name))
    return checked


def _checked(name: str, check: Any, value: Any) -> Any:
    try:
        return check(name, value)
    except InputError as err:
        raise ApiError(400, str(err), field=name) from None


def whole(body: Mapping[str, Any], name: str, required: bool = False) -> int | None:
    """A 64-bit whole number (JSON's 74.0 included), or None when absent or null."""
    value = body.get(name)
    if value is None:
        if required:
            raise ApiError(400, f"{name} is missing", field=name)
        return None
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int):
        raise ApiError(400, f"{name} must be a whole number", field=name)
    if not -(2**63) <= value < 2**63:
        raise ApiError(400, f"{name} is out of range", field=name)
    return value


def moment(body: Mapping[str, Any], name: str) -> datetime | None:
    """An RFC 3339 time with its zone, or None when absent or null."""
    value = body.get(name)
    if value is None:
        return None
    if not isinstance(value, str):
        raise ApiError(400, f"{name} must be an ISO 8601 time", field=name)
    try:
        when = _rfc3339(value)
    except ValueError:
        shown = value[:60]
        raise ApiError(400, f"{name} must be an ISO 8601 time, got {shown!r}", field=name) from None
    if when.tzinfo is None:
        raise ApiError(400, f"{name} needs a time zone (e.g. Z)", field=name)
    return when


def _rfc3339(text: str) -> datetime:
    """An RFC 3339 time as Python takes it: any case of T and Z, more than microsecond
    digits cut to microseconds, a leap second read as the second before."""
    normal = text.upper()
    match = re.fullmatch(r"(.{19})(\.\d+)?(Z|[+-]\d\d:\d\d)?", normal)
    if match is None:
        return datetime.fromisoformat(normal)
    whole, fraction, zone = match.groups()
    if whole.endswith(":60"):
        whole = whole[:-2] + "59"
    return datetime.fromisoformat(whole + (fraction or "")[:7] + (zone or ""))


def optional_strings(body: Mapping[str, Any], name: str) -> list[str] | None:
    """A list of strings, or None when absent or null."""
    value = body.get(name)
    if value is None:
        return None
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise ApiError(400, f"{name} must be a list of strings", field=name)
    for item in value:
        _checked(name, check_utf8, item)
    return value


def nullable_attributes(body: Mapping[str, Any], name: str) -> dict[str, str | None]:
    """Names mapped to strings or null (a removal); empty when absent or null."""
    value = body.get(name)
    if value is None:
        return {}
    if not isinstance(value, dict) or not all(
        isinstance(v, str) or v is None for v in value.values()
    ):
        raise ApiError(400, f"{name} must map names to strings (or null to remove)", field=name)
    for key, item in value.items():
        _checked(name, check_utf8, key)
        if item is not None:
            _checked(name, check_utf8, item)
    return value
