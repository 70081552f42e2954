"""Typed records <-> the dict form fastavro reads and writes, derived from the record types.

The one place that knows both shapes, and it knows them from the dataclasses in
``goaicore.records.types``: each record type's converters are compiled once from its
field types. Writing produces plain dicts with every field present, a union of records
(the event body) in fastavro's tuple notation ``(full name, dict)`` (two body records
can have identical fields, so the branch must be named, not guessed), tuples as lists,
enums by value and timestamps as integer milliseconds (naive datetimes are refused).
Reading expects what ``schemaless_reader`` returns with ``return_record_name=True,
return_record_name_override=True`` and gets timestamps back as UTC datetimes; fields a
newer reader schema adds are ignored here until the records grow them.

No validation happens here: the codec validates the dict against the schema, which
names the offending field precisely.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from collections.abc import Callable, Mapping
from datetime import UTC, datetime, timedelta
from enum import Enum
from functools import cache
from typing import Any, TypeVar, cast

from goaicore.errors import InputError
from goaicore.records.types import (
    ChatReply,
    ChatRequest,
    ConversationEvent,
    ConversationKey,
    ConversationSnapshot,
    ReplyChunk,
)

NAMESPACE = "goaicore"

AvroDict = dict[str, Any]
Convert = Callable[[Any], Any]
R = TypeVar("R")


class ShapeError(InputError, TypeError):
    """A record that cannot be put in the schema's shape (an unknown body, a naive time)."""


def full_name(name: str) -> str:
    """The Avro full name of a record of ours, e.g. ``goaicore.UserMessage``."""
    return f"{NAMESPACE}.{name}"


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_MILLISECOND = timedelta(milliseconds=1)


def _millis(value: datetime, label: str) -> int:
    """Milliseconds since the epoch; naive datetimes are refused rather than guessed."""
    if not isinstance(value, datetime) or value.utcoffset() is None:
        raise ShapeError(f"{label} must be a timezone-aware datetime, got {value!r}")
    return (value - _EPOCH) // _MILLISECOND


def _members(hint: Any) -> tuple[list[Any], bool]:
    """A union's members other than None, and whether None is one of them."""
    args = typing.get_args(hint)
    return [a for a in args if a is not type(None)], type(None) in args


def _is_union(hint: Any) -> bool:
    return typing.get_origin(hint) in (typing.Union, types.UnionType)


def _is_record(hint: Any) -> bool:
    return isinstance(hint, type) and dataclasses.is_dataclass(hint)


class _Compiler:
    """Straight-line converter functions for one record type, written once as source.

    Each field becomes one expression over ``v`` (the value being converted); helpers
    it calls are bound by name in the function's namespace. Generated code runs as fast
    as hand-written converters, and there is nothing hand-written to keep in step.
    """

    def __init__(self) -> None:
        self.namespace: dict[str, Any] = {}

    def bind(self, value: Any) -> str:
        name = f"_h{len(self.namespace)}"
        self.namespace[name] = value
        return name

    def function(self, source: str, name: str) -> Any:
        exec(compile(source, f"<goaicore.records.convert {name}>", "exec"), self.namespace)
        return self.namespace[name]


# -- writing ----------------------------------------------------------------------------


def _write_expr(hint: Any, v: str, label: str, c: _Compiler) -> str:
    """An expression writing the value ``v`` of type ``hint`` in fastavro's form."""
    if _is_union(hint):
        members, optional = _members(hint)
        if len(members) == 1:
            inner = _write_expr(members[0], v, label, c)
        else:
            inner = f"{c.bind(_union_writer(members, label))}({v})"
        if optional and inner != v:
            return f"(None if {v} is None else {inner})"
        return inner
    if typing.get_origin(hint) is tuple:
        item = _write_expr(typing.get_args(hint)[0], "x", label, c)
        return f"list({v})" if item == "x" else f"[{item} for x in {v}]"
    if hint is datetime:
        return f"{c.bind(_millis)}({v}, {label!r})"
    if isinstance(hint, type) and issubclass(hint, Enum):
        # A plain str passes through, so that validation reports a bad symbol.
        return f"({v}.value if isinstance({v}, {c.bind(Enum)}) else {v})"
    if _is_record(hint):
        return f"{c.bind(record_writer(hint))}({v})"
    return v  # str, int, bool, float, bytes, mappings of them


def _union_writer(members: list[Any], label: str) -> Convert:
    branches = {m: (full_name(m.__name__), record_writer(m)) for m in members}
    known = ", ".join(m.__name__ for m in members)

    def write(value: Any) -> tuple[str, AvroDict]:
        entry = branches.get(type(value))
        if entry is None:
            raise ShapeError(f"{label} is a {type(value).__name__}, expected one of {known}")
        name, write_record = entry
        return name, write_record(value)

    return write


@cache
def record_writer(record_type: type[Any]) -> Callable[[Any], AvroDict]:
    """The fastavro form of a record of ``record_type``: every field present."""
    hints = typing.get_type_hints(record_type)
    c = _Compiler()
    items = [
        f"{f.name!r}: "
        + _write_expr(hints[f.name], f"r.{f.name}", f"{record_type.__name__}.{f.name}", c)
        for f in dataclasses.fields(record_type)
    ]
    source = "def write(r):\n    return {" + ", ".join(items) + "}\n"
    writer: Callable[[Any], AvroDict] = c.function(source, "write")
    return writer


# -- reading ----------------------------------------------------------------------------


def _read_expr(hint: Any, v: str, c: _Compiler) -> str:
    """An expression reading the value ``v`` of type ``hint`` from fastavro's form."""
    if _is_union(hint):
        members, optional = _members(hint)
        if len(members) == 1:
            inner = _read_expr(members[0], v, c)
        else:
            by_name = c.bind({full_name(m.__name__): record_reader(m) for m in members})
            inner = f"{by_name}[{v}[0]]({v}[1])"
        if optional and inner != v:
            return f"(None if {v} is None else {inner})"
        return inner
    if typing.get_origin(hint) is tuple:
        item = _read_expr(typing.get_args(hint)[0], "x", c)
        return f"tuple({v})" if item == "x" else f"tuple([{item} for x in {v}])"
    if isinstance(hint, type) and issubclass(hint, Enum):
        return f"{c.bind(hint)}({v})"
    if _is_record(hint):
        return f"{c.bind(record_reader(hint))}({v})"
    return v  # datetimes come back as UTC datetimes; the rest as it is


@cache
def record_reader(record_type: type[R]) -> Callable[[Mapping[str, Any]], R]:
    """A record of ``record_type`` from fastavro's dict."""
    hints = typing.get_type_hints(record_type)
    c = _Compiler()
    cls = c.bind(record_type)
    items = [
        f"{f.name}=" + _read_expr(hints[f.name], f"d[{f.name!r}]", c)
        for f in dataclasses.fields(cast(Any, record_type))
    ]
    source = f"def read(d):\n    return {cls}(" + ", ".join(items) + ")\n"
    reader: Callable[[Mapping[str, Any]], R] = c.function(source, "read")
    return reader


# -- the records of the wire contract ----------------------------------------------

event_to_avro: Callable[[ConversationEvent], AvroDict] = record_writer(ConversationEvent)
event_from_avro: Callable[[Mapping[str, Any]], ConversationEvent] = record_reader(ConversationEvent)
chat_request_to_avro: Callable[[ChatRequest], AvroDict] = record_writer(ChatRequest)
chat_request_from_avro: Callable[[Mapping[str, Any]], ChatRequest] = record_reader(ChatRequest)
chat_reply_to_avro: Callable[[ChatReply], AvroDict] = record_writer(ChatReply)
chat_reply_from_avro: Callable[[Mapping[str, Any]], ChatReply] = record_reader(ChatReply)
snapshot_to_avro: Callable[[ConversationSnapshot], AvroDict] = record_writer(ConversationSnapshot)
snapshot_from_avro: Callable[[Mapping[str, Any]], ConversationSnapshot] = record_reader(
    ConversationSnapshot
)
key_to_avro: Callable[[ConversationKey], AvroDict] = record_writer(ConversationKey)
key_from_avro: Callable[[Mapping[str, Any]], ConversationKey] = record_reader(ConversationKey)
reply_chunk_to_avro: Callable[[ReplyChunk], AvroDict] = record_writer(ReplyChunk)
reply_chunk_from_avro: Callable[[Mapping[str, Any]], ReplyChunk] = record_reader(ReplyChunk)
