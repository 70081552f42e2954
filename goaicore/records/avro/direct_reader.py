"""Records read straight from Avro bytes written with the current schema.

fastavro's generic reader builds a dict per record, which ``convert`` then turns into
the record: together most of what the fold worker spends on an event. For the common
case, a payload written with the very schema the reader holds, this module compiles
one function per record type from that schema and the record's dataclass, as
``convert`` compiles its converters: straight-line Python that reads each field from
the buffer (varints inline) and fills the record's slots, as ``__init__`` would, with
sequences already tuples and maps already dicts (all ``__post_init__`` would do).

It is a shortcut, never a second authority: anything it does not take exactly as the
schema says (an out-of-range union index, enum index or boolean, a length past the
end, bytes left over, bad UTF-8, a time out of range) raises, and the codec reads the
payload with fastavro, whose result or error stands. Property tests hold the two
readers equal on every record and on corrupted payloads.
"""

from __future__ import annotations

import dataclasses
import typing
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from enum import Enum
from typing import Any

from goaicore.records.avro.generated import (
    NotDirect,
    SchemaCompiler,
    Source,
    is_record_type,
    named_type,
)
from goaicore.records.avro.native import native_reader
from goaicore.records.convert import full_name

Read = Callable[[bytes, int], tuple[Any, int]]

# Nine bytes hold 63 bits. fastavro keeps the low 64 bits of a longer varint; such
# (rare, or damaged) varints are left to it.
_MAX_VARINT_BYTES = 9


def _long(b: bytes, p: int) -> tuple[int, int]:
    """A zigzag varint at ``p`` (the generated code inlines the one-byte case)."""
    value = 0
    shift = 0
    end = min(p + _MAX_VARINT_BYTES, len(b))
    while p < end:  # a plain loop: a range() cost a sixth more on a 6-byte timestamp
        byte = b[p]
        p += 1
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return (value >> 1) ^ -(value & 1), p
        shift += 7
    raise NotDirect("a varint past the end or of more than 63 bits")


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_MILLIS = [timedelta(milliseconds=n) for n in range(1000)]
_seconds: dict[int, datetime] = {}


def _time(millis: int) -> datetime:
    """fastavro's timestamp-millis (the epoch plus that many milliseconds, in UTC).

    Building a timedelta of a large count costs a microsecond; events come many to a
    second, so the whole seconds are remembered.
    """
    seconds, rest = divmod(millis, 1000)
    at = _seconds.get(seconds)
    if at is None:
        if len(_seconds) >= 4096:
            _seconds.clear()
        at = _seconds[seconds] = _EPOCH + timedelta(seconds=seconds)
    return at + _MILLIS[rest]


class _Compiler(SchemaCompiler[None]):
    """Emits the code reading a schema's value (at ``p`` in ``b``, moving ``p`` past it)
    into ``target``, as the Python type it becomes."""

    def __init__(self) -> None:
        super().__init__(Source({"_long": _long, "_time": _time, "new": object.__new__}), {})

    def primitive(self, kind: str, target: str, indent: int) -> None:
        out = self.source
        if kind == "null":
            return out.add(indent, f"{target} = None")
        if kind == "boolean":
            return out.add(
                indent,
                f"{target} = b[p]",
                "p += 1",
                f"if {target} > 1: raise NotDirect('a boolean neither 0 nor 1')",
                f"{target} = {target} == 1",
            )
        self._long(target, indent)
        if kind in ("string", "bytes"):
            end = out.var()
            decoded = ".decode('utf-8')" if kind == "string" else ""
            out.add(
                indent,
                f"{end} = p + {target}",
                f"if {target} < 0 or {end} > len(b): raise NotDirect('a {kind} past the end')",
                f"{target} = b[p:{end}]{decoded}",
                f"p = {end}",
            )
        return None

    def timestamp(self, target: str, indent: int) -> None:
        self._long(target, indent)
        self.source.add(indent, f"{target} = _time({target})")

    def array(self, items: Any, hint: Any, target: str, indent: int) -> None:
        item = self.source.var()
        found = self._blocks(indent, lambda inner: self.emit(items, hint, item, inner), item)
        self.source.add(indent, f"{target} = tuple({found})")

    def map(self, values: Any, hint: Any, target: str, indent: int) -> None:
        key, value = self.source.var(), self.source.var()

        def entry(inner: int) -> None:
            self.emit("string", str, key, inner)
            self.emit(values, hint, value, inner)

        entries = self._blocks(indent, entry, f"({key}, {value})")
        self.source.add(indent, f"{target} = dict({entries})")

    def _long(self, target: str, indent: int) -> None:
        self.source.add(
            indent,
            f"{target} = b[p]",
            f"if {target} < 0x80: p += 1; {target} = ({target} >> 1) ^ -({target} & 1)",
            f"else: {target}, p = _long(b, p)",
        )

    def _blocks(self, indent: int, emit_item: Callable[[int], None], item: str) -> str:
        """Avro's blocked arrays and maps: counts (negative: followed by the block's byte
        size) each followed by that many items, until a zero count. Returns the list."""
        out = self.source
        items, count, size = out.var(), out.var(), out.var()
        out.add(indent, f"{items} = []", "while True:")
        self._long(count, indent + 1)
        out.add(
            indent + 1,
            f"if {count} == 0: break",
            f"if {count} < 0:",
            f"    {count} = -{count}",
        )
        self._long(size, indent + 2)
        out.add(
            indent + 1,
            f"if {count} > len(b) - p: raise NotDirect('more items than bytes')",
            f"for _ in range({count}):",
        )
        emit_item(indent + 2)
        out.add(indent + 2, f"{items}.append({item})")
        return items

    def union(self, branches: list[Any], hint: Any, target: str, indent: int) -> None:
        members = [m for m in typing.get_args(hint) if m is not type(None)] or [hint]
        by_name = {full_name(m.__name__): m for m in members if is_record_type(m)}
        index = self.source.var()
        self._long(index, indent)
        for number, branch in enumerate(branches):
            self.source.add(indent, f"{'if' if number == 0 else 'elif'} {index} == {number}:")
            name = named_type(branch)
            member = by_name.get(name, members[0]) if name is not None else members[0]
            self.emit(branch, member, target, indent + 1)
        self.source.add(indent, "else: raise NotDirect('a union index out of range')")

    def record(self, schema: Any, record_type: Any, target: str, indent: int) -> None:
        if not is_record_type(record_type):
            raise TypeError(f"record {schema['name']} read as {record_type!r}")
        hints = typing.get_type_hints(record_type)
        wanted = {field.name for field in dataclasses.fields(record_type)}
        if not wanted <= {field["name"] for field in schema["fields"]}:
            raise TypeError(f"{record_type.__name__} has fields {schema['name']} lacks")
        values = []
        for field in schema["fields"]:
            value = self.source.var()
            kept = field["name"] in wanted
            self.emit(field["type"], hints[field["name"]] if kept else Any, value, indent)
            if kept:
                setter = self.source.bind(getattr(record_type, field["name"]).__set__)
                values.append(f"{setter}({target}, {value})")
        # The slots are filled directly: what the frozen __init__ does, without its checks.
        self.source.add(indent, f"{target} = new({self.source.bind(record_type)})", *values)

    def enum(self, schema: Any, hint: Any, target: str, indent: int) -> None:
        symbols = schema["symbols"]
        is_enum = isinstance(hint, type) and issubclass(hint, Enum)
        values = self.source.bind(tuple(hint(s) for s in symbols) if is_enum else tuple(symbols))
        self._long(target, indent)
        self.source.add(
            indent,
            f"if not 0 <= {target} < {len(symbols)}: raise NotDirect('an enum index out of range')",
            f"{target} = {values}[{target}]",
        )


def compile_reader(schema: Any, record_type: type[Any], native: bool = True) -> Read | None:
    """A direct reader of ``record_type`` for bodies written with the parsed ``schema``
    (``read(data, position) -> (record, end)``), or None when the schema uses something
    it does not read. The reader is the compiled core's where it is installed
    (``native``: unless False), else generated Python; the two take the same payloads
    and read the same records."""
    compiler = _Compiler()
    try:
        compiler.emit(schema, record_type, "record", 1)
    except (TypeError, KeyError):
        return None
    if native:
        compiled = native_reader(schema, record_type)
        if compiled is not None:
            read_native: Read = compiled
            return read_native
    read: Read = compiler.source.function(
        "read(b, p)", f"direct reader {record_type.__name__}", "return record, p"
    )
    return read
