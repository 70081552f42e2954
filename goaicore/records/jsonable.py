"""Records as plain JSON values: what the HTTP API answers and the projection stores."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from datetime import datetime
from enum import Enum
from typing import Any


def _same(text: str) -> str:
    return text


def jsonable(value: Any, text: Callable[[str], str] = _same) -> Any:
    """Dataclasses as objects, times in ISO form, enums by value; every string through ``text``.

    Raises ``TypeError`` for a value with no JSON form.
    """
    if isinstance(value, str):
        return text(value)
    if value is None or isinstance(value, bool | int | float):
        return value
    if isinstance(value, Enum):
        return jsonable(value.value, text)
    if isinstance(value, datetime):
        return value.isoformat()
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: jsonable(getattr(value, f.name), text) for f in dataclasses.fields(value)}
    if isinstance(value, Mapping):
        return {text(str(k)): jsonable(v, text) for k, v in value.items()}
    if isinstance(value, tuple | list):
        return [jsonable(v, text) for v in value]
    raise TypeError(f"no JSON form for {type(value).__name__}")
