"""Records as JSON text in one pass: what the projection stores for every event.

``json.dumps(jsonable(record))`` walks a record twice and asks every value its type;
the projector pays that for every event it writes. This module compiles, once per
dataclass, straight-line code that writes the JSON text of a record whose values
are exactly of the types its fields declare, and hands anything else (a subclass, a
float, a value the hints do not name) back to that generic path. Property tests hold
the two equal for every record.
"""

from __future__ import annotations

import base64
import dataclasses
import json
import types
import typing
from collections.abc import Callable, Mapping
from datetime import datetime
from enum import Enum
from typing import Any

from goaicore.records.avro.generated import NotDirect, Source, is_record_type
from goaicore.records.jsonable import jsonable

Text = Callable[[str], str]
Write = Callable[[Any, list[str]], None]

_quote: Callable[[str], str] = json.encoder.encode_basestring_ascii


def _same(text: str) -> str:
    return text


def json_text(value: Any, text: Text = _same) -> str:
    """``json.dumps(jsonable(value, text))`` without spaces (``compact``), written directly
    when ``value`` is a record of exactly its declared types."""
    write = _writer(type(value), text) if is_record_type(type(value)) else None
    if write is not None:
        parts: list[str] = []
        try:
            write(value, parts)
        except NotDirect:
            pass
        else:
            return "".join(parts)
    return compact(jsonable(value, text))


def compact(value: Any) -> str:
    """JSON text with no spaces, as the direct writer writes it."""
    return json.dumps(value, separators=(",", ":"))


# By record type and text function; the text functions are a few module-level ones.
_WRITERS: dict[tuple[type, Text], Write | None] = {}


def _writer(record_type: type, text: Text) -> Write | None:
    """The compiled writer of ``record_type`` (None when its hints name what it cannot
    write); compiled on first use."""
    key = (record_type, text)
    if key not in _WRITERS:
        _WRITERS[key] = _Compiler(text).compile(record_type)
    return _WRITERS[key]


class _Compiler:
    """Emits the code appending the JSON text of ``value`` (an expression) to ``out``."""

    def __init__(self, text: Text) -> None:
        self.text = text
        self.within: set[type] = set()  # the record types whose code is being emitted
        self.source = Source(
            {"_quote": _quote, "_text": text, "_int": int.__repr__, "_b64": base64.b64encode}
        )

    def compile(self, record_type: type) -> Write | None:
        try:
            self.record(record_type, "value", 1)
        except (TypeError, NameError):  # a hint it does not write, or cannot resolve
            return None
        write: Write = self.source.function(
            "write(value, out)", f"json text {record_type.__name__}"
        )
        return write

    def emit(self, hint: Any, value: str, indent: int) -> None:
        add = self.source.add
        origin, args = typing.get_origin(hint), typing.get_args(hint)
        if hint is str:
            add(
                indent,
                f"if type({value}) is not str: raise NotDirect('not a str')",
                f"out.append(_quote(_text({value})))",
            )
        elif hint is bool:
            add(
                indent,
                f"if type({value}) is not bool: raise NotDirect('not a bool')",
                f"out.append('true' if {value} else 'false')",
            )
        elif hint is int:
            add(
                indent,
                f"if type({value}) is not int: raise NotDirect('not an int')",
                f"out.append(_int({value}))",
            )
        elif hint is bytes:
            add(
                indent,
                f"if type({value}) is not bytes: raise NotDirect('not bytes')",
                f"out.append('\"' + _b64({value}).decode() + '\"')",
            )
        elif hint is datetime:
            add(
                indent,
                f"if type({value}) is not datetime: raise NotDirect('not a datetime')",
                f"out.append('\"' + {value}.isoformat() + '\"')",
            )
            self.source.namespace["datetime"] = datetime
        elif isinstance(hint, type) and issubclass(hint, Enum):
            texts = {member: compact(jsonable(member.value, self.text)) for member in hint}
            enum_type = self.source.bind(hint)
            add(
                indent,
                f"if type({value}) is not {enum_type}: raise NotDirect('not the enum')",
                f"out.append({self.source.bind(texts)}[{value}])",
            )
        elif is_record_type(hint):
            self.record(hint, value, indent)
        elif origin in (typing.Union, types.UnionType):
            self.union(args, value, indent)
        elif origin is tuple and len(args) == 2 and args[1] is Ellipsis:
            self.array(args[0], value, indent)
        elif origin in (dict, Mapping) and args and args[0] is str:
            self.mapping(args[1], value, indent)
        else:
            raise TypeError(f"no JSON text writer for {hint!r}")

    def record(self, record_type: type, value: str, indent: int) -> None:
        if record_type in self.within:
            raise TypeError(f"{record_type.__name__} holds itself")  # written the generic way
        self.within.add(record_type)
        try:
            self._record(record_type, value, indent)
        finally:
            self.within.discard(record_type)

    def _record(self, record_type: type, value: str, indent: int) -> None:
        hints = typing.get_type_hints(record_type)
        fields = dataclasses.fields(record_type)
        self.source.add(
            indent,
            f"if type({value}) is not {self.source.bind(record_type)}: "
            "raise NotDirect('not the record type')",
        )
        if not fields:
            return self.source.add(indent, "out.append('{}')")
        for number, field in enumerate(fields):
            item = self.source.var()
            key = ("{" if number == 0 else ",") + json.dumps(field.name) + ":"
            self.source.add(indent, f"out.append({key!r})", f"{item} = {value}.{field.name}")
            self.emit(hints[field.name], item, indent)
        return self.source.add(indent, "out.append('}')")

    def union(self, members: tuple[Any, ...], value: str, indent: int) -> None:
        present = [m for m in members if m is not type(None)]
        if len(present) < len(members):
            self.source.add(indent, f"if {value} is None:", "    out.append('null')", "else:")
            indent += 1
        if len(present) == 1:
            return self.emit(present[0], value, indent)
        if not all(is_record_type(m) for m in present):
            raise TypeError(f"no JSON text writer for the union {members!r}")
        kind = self.source.var()
        self.source.add(indent, f"{kind} = type({value})")
        for number, member in enumerate(present):
            self.source.add(
                indent, f"{'if' if number == 0 else 'elif'} {kind} is {self.source.bind(member)}:"
            )
            self.emit(member, value, indent + 1)
        self.source.add(indent, "else: raise NotDirect('not a member of the union')")
        return None

    def array(self, items: Any, value: str, indent: int) -> None:
        item, first = self.source.var(), self.source.var()
        self.source.add(
            indent,
            f"if type({value}) is not tuple: raise NotDirect('not a tuple')",
            "out.append('[')",
            f"{first} = True",
            f"for {item} in {value}:",
            f"    if {first}: {first} = False",
            "    else: out.append(',')",
        )
        self.emit(items, item, indent + 1)
        self.source.add(indent, "out.append(']')")

    def mapping(self, values: Any, value: str, indent: int) -> None:
        key, item, first = self.source.var(), self.source.var(), self.source.var()
        self.source.add(
            indent,
            f"if type({value}) is not dict: raise NotDirect('not a dict')",
            "out.append('{')",
            f"{first} = True",
            f"for {key}, {item} in {value}.items():",
            f"    if {first}: {first} = False",
            "    else: out.append(',')",
        )
        # A key the text function changes could meet another key; the generic path
        # keeps the last of them, so it writes such a mapping.
        self.source.add(
            indent + 1,
            f"if type({key}) is not str or _text({key}) is not {key}: "
            "raise NotDirect('a key the text function changes')",
            f"out.append(_quote({key}))",
            "out.append(':')",
        )
        self.emit(values, item, indent + 1)
        self.source.add(indent, "out.append('}')")
