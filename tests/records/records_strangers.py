"""Records with a field, at any depth, swapped for a value of another type.

The direct writers (Avro and JSON) take only values of exactly the declared types and
hand the rest to a generic path; these records show both paths agree on anything.
"""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime, timedelta, timezone
from enum import Enum, IntEnum
from types import MappingProxyType
from typing import Any

from hypothesis import strategies as st

from goaicore.records.types import ReplyStatus


class _Text(str):
    pass


class _Level(IntEnum):
    HIGH = 2


class _Moment(datetime):
    pass


class _Other(Enum):
    OK = "ok"  # a ReplyStatus value, in another enum


# Values of every kind the records hold, and of kinds they never should.
STRANGERS = st.sampled_from(
    [
        None,
        True,
        False,
        0,
        -1,
        2**31,
        2**40,
        2**63,
        -(2**64),
        1.5,
        "",
        "text",
        "\ud800",  # a lone surrogate has no UTF-8 form
        b"bytes",
        (),
        ("a",),
        ["a"],
        {},
        {"k": "v"},
        {"k": 1},
        {1: "v"},
        ReplyStatus.OK,
        _Other.OK,
        datetime(2026, 1, 1),  # naive
        datetime(2026, 1, 1, 12, 0, 0, 123456, tzinfo=UTC),
        datetime(2026, 1, 1, tzinfo=timezone(timedelta(hours=-5))),
        object(),
        _Text("a str subclass"),
        _Level.HIGH,  # an int subclass
        _Moment(2026, 1, 1, tzinfo=UTC),  # a datetime subclass
        MappingProxyType({"k": "v"}),
    ]
)


def swap_stranger(record: Any, data: st.DataObject) -> Any:
    """``record`` with one field, here or in a nested record, swapped for a stranger."""
    fields = [field.name for field in dataclasses.fields(record)]
    name = data.draw(st.sampled_from(fields))
    value = getattr(record, name)
    candidates: tuple[Any, ...] = value if isinstance(value, tuple) else (value,)
    nested = [item for item in candidates if dataclasses.is_dataclass(item)]
    go_deeper: bool = bool(nested) and data.draw(st.booleans())
    if go_deeper:
        inner = data.draw(st.sampled_from(nested))
        swapped = swap_stranger(inner, data)
        if isinstance(value, tuple):
            value = tuple(swapped if item is inner else item for item in value)
        else:
            value = swapped
    else:
        value = data.draw(STRANGERS)
    copy = object.__new__(type(record))
    for field in fields:
        object.__setattr__(copy, field, getattr(record, field))
    object.__setattr__(copy, name, value)  # past __post_init__, as a careless caller could
    return copy
