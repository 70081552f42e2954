"""Records as plain JSON values: what the HTTP API answers and the projection stores."""

from __future__ import annotations

import base64
import dataclasses
from collections.abc import Callable, Mapping
from datetime import datetime
from enum import Enum
from typing import Any


def _same(text: str) -> str:
    return text


# Field names per dataclass type, filled on first sight: the projector converts every
# event body, and looking the fields up each time cost a third of the conversion.
_FIELD_NAMES: dict[type, tuple[str, ...]] = {}
_PLAIN = frozenset({int, float, bool, type(None)})


def jsonable(value: Any, text: Callable[[str], str] = _same) -> Any:
    """Dataclasses as objects, times in ISO form, enums by value, bytes in base64; every
    string through ``text``.

    Raises ``TypeError`` for a value with no JSON form.
    """
    kind = type(value)
    if kind is str:
        return text(value)
    if kind in _PLAIN:
        return value
    names = _FIELD_NAMES.get(kind)
    if names is not None:
        return {name: jsonable(getattr(value, name), text) for name in names}
    if kind is tuple or kind is list:
        return [jsonable(item, text) for item in value]
    return _jsonable_other(value, text)


def _jsonable_other(value: Any, text: Callable[[str], str]) -> Any:
    """Subclasses, enums, times, mappings and dataclasses not seen before."""
    if isinstance(value, str):
        return text(value)
    if value is None or isinstance(value, bool | int | float):
        return value
    if isinstance(value, Enum):
        return jsonable(value.value, text)
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, bytes):
        return base64.b64encode(value).decode()  # sealed content: opaque, kept whole
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        names = tuple(f.name for f in dataclasses.fields(value))
        _FIELD_NAMES[type(value)] = names
        return {name: jsonable(getattr(value, name), text) for name in names}
    if isinstance(value, Mapping):
        return {text(str(k)): jsonable(v, text) for k, v in value.items()}
    if isinstance(value, tuple | list):
        return [jsonable(v, text) for v in value]
    raise TypeError(f"no JSON form for {type(value).__name__}")
