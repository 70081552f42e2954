"""A fast yes/no check that a datum fits a schema, compiled once per schema.

fastavro's writer coerces silently (``True`` and ``1.5`` become the long 1, any object
becomes a boolean, a 2**40 goes into an int field) and its ``validate`` is about four
times slower than the write itself. This check is strict and cheap; only when it fails
do we ask fastavro's ``validate`` for the detailed per-field messages.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any

Check = Callable[[Any], bool]

_INT_MIN, _INT_MAX = -(2**31), 2**31 - 1
_LONG_MIN, _LONG_MAX = -(2**63), 2**63 - 1


def _is_null(v: Any) -> bool:
    return v is None


def _is_boolean(v: Any) -> bool:
    return type(v) is bool


def _is_int(v: Any) -> bool:
    return type(v) is int and _INT_MIN <= v <= _INT_MAX


def _is_long(v: Any) -> bool:
    return type(v) is int and _LONG_MIN <= v <= _LONG_MAX


def _is_timestamp(v: Any) -> bool:
    if type(v) is int:
        return _LONG_MIN <= v <= _LONG_MAX
    return isinstance(v, datetime) and v.utcoffset() is not None


def _is_number(v: Any) -> bool:
    return type(v) in (int, float)


def _is_string(v: Any) -> bool:
    return isinstance(v, str)


def _is_bytes(v: Any) -> bool:
    return isinstance(v, bytes | bytearray)


_PRIMITIVES: dict[str, Check] = {
    "null": _is_null,
    "boolean": _is_boolean,
    "int": _is_int,
    "long": _is_long,
    "float": _is_number,
    "double": _is_number,
    "string": _is_string,
    "bytes": _is_bytes,
}


def compile_check(schema: Any) -> Check:
    """A function telling whether a datum (in fastavro's write form) fits ``schema``.

    ``schema`` is a fastavro-parsed schema (full names, named types defined once).
    Union branches may be given in tuple notation ``(full name, value)``.
    """
    named: dict[str, Check] = {}
    return _compile(schema, named)


def _compile(schema: Any, named: dict[str, Check]) -> Check:
    if isinstance(schema, str):
        if schema in _PRIMITIVES:
            return _PRIMITIVES[schema]
        # A reference to a named type, possibly still being compiled (recursion).
        return lambda v: named[schema](v)
    if isinstance(schema, list):
        return _union(schema, named)
    kind = schema["type"]
    logical = schema.get("logicalType")
    if logical in ("timestamp-millis", "timestamp-micros") and kind == "long":
        return _is_timestamp
    if kind == "record":
        return _record(schema, named)
    if kind == "enum":
        symbols = frozenset(schema["symbols"])
        check: Check = lambda v: isinstance(v, str) and v in symbols  # noqa: E731
        named[schema["name"]] = check
        return check
    if kind == "array":
        item = _compile(schema["items"], named)
        return lambda v: isinstance(v, list | tuple) and all(item(x) for x in v)
    if kind == "map":
        value = _compile(schema["values"], named)
        return lambda v: (
            isinstance(v, dict) and all(isinstance(k, str) and value(x) for k, x in v.items())
        )
    if kind == "fixed":
        size = schema["size"]
        return lambda v: _is_bytes(v) and len(v) == size
    if isinstance(kind, str | list | dict):
        return _compile(kind, named)  # {"type": "string"} and friends
    raise ValueError(f"cannot check schema {schema!r}")


def _record(schema: dict[str, Any], named: dict[str, Check]) -> Check:
    fields: list[tuple[str, Check]] = []

    def check(v: Any) -> bool:
        return isinstance(v, dict) and all(
            name in v and field_check(v[name]) for name, field_check in fields
        )

    named[schema["name"]] = check  # before the fields, for recursive types
    fields.extend((f["name"], _compile(f["type"], named)) for f in schema["fields"])
    return check


def _branch_name(schema: Any) -> str | None:
    if isinstance(schema, dict) and "name" in schema:
        return str(schema["name"])
    if isinstance(schema, str) and schema not in _PRIMITIVES:
        return schema
    return None


def _union(branches: list[Any], named: dict[str, Check]) -> Check:
    checks = [_compile(b, named) for b in branches]
    by_name = {
        name: check
        for name, check in zip((_branch_name(b) for b in branches), checks, strict=True)
        if name is not None
    }
    if len(checks) == 2 and branches[0] == "null":
        other = checks[1]
        return lambda v: v is None or other(v)

    def check(v: Any) -> bool:
        if type(v) is tuple and len(v) == 2 and v[0] in by_name:
            return by_name[v[0]](v[1])
        return any(c(v) for c in checks)

    return check
