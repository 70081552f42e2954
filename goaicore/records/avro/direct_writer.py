"""Avro bytes written straight from a record, in the current schema.

The generic path converts a record to fastavro's dict (``convert``), checks the dict
against the schema (``check``) and has fastavro write it: three walks over the record,
most of what the fold worker spends encoding a snapshot's new messages. This module
compiles, once per record type, straight-line Python that writes the record's fields
in schema order (the mirror of ``direct_reader``).

It is a shortcut, never a second authority: it takes only values of exactly the types
the record declares (a ``str`` for a string, an ``int`` in range for a long, a
timezone-aware ``datetime`` for a timestamp, the enum's own members, tuples and dicts
as the records keep them), and raises :class:`NotDirect` for anything else, so the
codec's generic path writes it or names what is wrong. Property tests hold the bytes
equal to fastavro's for every record.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from goaicore.records.avro.generated import (
    NotDirect,
    SchemaCompiler,
    Source,
    Write,
    check_enum,
    named_types,
    nullable_member,
    record_hints,
    union_record_types,
)
from goaicore.records.avro.native import native_writer

_INT = (-(2**31), 2**31 - 1)
_LONG = (-(2**63), 2**63 - 1)
_SMALL = [bytes([n]) for n in range(0x80)]
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_MILLISECOND = timedelta(milliseconds=1)


def varint(value: int) -> bytes:
    """Avro's zigzag varint of a long."""
    zigzag = (value << 1) ^ (value >> 63)
    if zigzag < 0x80:
        return _SMALL[zigzag]
    out = bytearray()
    while zigzag & ~0x7F:
        out.append((zigzag & 0x7F) | 0x80)
        zigzag >>= 7
    out.append(zigzag)
    return bytes(out)


def _millis(value: Any) -> int:
    """A timestamp's milliseconds as ``convert`` computes them; aware datetimes only."""
    if type(value) is not datetime or value.utcoffset() is None:
        raise NotDirect("not an aware datetime")
    millis: int = (value - _EPOCH) // _MILLISECOND
    return millis


class _Compiler(SchemaCompiler[None]):
    """Emits the code appending the encoding of ``value`` (an expression) to ``out``."""

    def __init__(self, overrides: dict[str, Write], named: dict[str, Any]) -> None:
        source = Source(
            {
                "varint": varint,
                "_millis": _millis,
                "_NULL": b"\x00",
                "_SECOND": b"\x02",
                "_TRUE": b"\x01",
                "_FALSE": b"\x00",
                "_END": b"\x00",
            }
        )
        super().__init__(source, named)
        self.overrides = overrides  # the outer record's fields written by a function of it
        self.outer_seen = False

    def primitive(self, kind: str, value: str, indent: int) -> None:
        out = self.source
        if kind == "null":
            return out.add(indent, f"if {value} is not None: raise NotDirect('not null')")
        if kind == "boolean":
            return out.add(
                indent,
                f"if type({value}) is not bool: raise NotDirect('not a bool')",
                f"out.append(_TRUE if {value} else _FALSE)",
            )
        if kind == "string":
            encoded = out.var()
            return out.add(
                indent,
                f"if type({value}) is not str: raise NotDirect('not a str')",
                f"{encoded} = {value}.encode('utf-8')",
                f"out.append(varint(len({encoded})))",
                f"out.append({encoded})",
            )
        if kind == "bytes":
            return out.add(
                indent,
                f"if type({value}) is not bytes: raise NotDirect('not bytes')",
                f"out.append(varint(len({value})))",
                f"out.append({value})",
            )
        low, high = _INT if kind == "int" else _LONG
        return out.add(
            indent,
            f"if type({value}) is not int or not {low} <= {value} <= {high}: "
            "raise NotDirect('not an int in range')",
            f"out.append(varint({value}))",
        )

    def timestamp(self, value: str, indent: int) -> None:
        millis = self.source.var()
        self.source.add(indent, f"{millis} = _millis({value})", f"out.append(varint({millis}))")

    def array(self, items: Any, hint: Any, value: str, indent: int) -> None:
        item = self.source.var()
        self.source.add(
            indent,
            f"if type({value}) is not tuple: raise NotDirect('not a tuple')",
            f"if {value}:",
            f"    out.append(varint(len({value})))",
            f"    for {item} in {value}:",
        )
        self.emit(items, hint, item, indent + 2)
        self.source.add(indent, "out.append(_END)")

    def map(self, values: Any, hint: Any, value: str, indent: int) -> None:
        key, item = self.source.var(), self.source.var()
        self.source.add(
            indent,
            f"if type({value}) is not dict: raise NotDirect('not a dict')",
            f"if {value}:",
            f"    out.append(varint(len({value})))",
            f"    for {key}, {item} in {value}.items():",
        )
        self.emit("string", str, key, indent + 2)
        self.emit(values, hint, item, indent + 2)
        self.source.add(indent, "out.append(_END)")

    def union(self, branches: list[Any], hint: Any, value: str, indent: int) -> None:
        if len(branches) == 2 and branches[0] == "null":
            self.source.add(indent, f"if {value} is None:", "    out.append(_NULL)", "else:")
            self.source.add(indent + 1, "out.append(_SECOND)")
            return self.emit(branches[1], nullable_member(hint), value, indent + 1)
        record_types = union_record_types(branches, hint)
        kind = self.source.var()
        self.source.add(indent, f"{kind} = type({value})")
        for number, (branch, record_type) in enumerate(zip(branches, record_types, strict=True)):
            self.source.add(
                indent,
                f"{'if' if number == 0 else 'elif'} {kind} is {self.source.bind(record_type)}:",
                f"    out.append({self.source.bind(varint(number))})",
            )
            self.emit(branch, record_type, value, indent + 1)
        self.source.add(indent, "else: raise NotDirect('not a branch of the union')")

    def record(self, schema: Any, record_type: Any, value: str, indent: int) -> None:
        hints = record_hints(schema, record_type)
        outer, self.outer_seen = not self.outer_seen, True
        self.source.add(
            indent,
            f"if type({value}) is not {self.source.bind(record_type)}: "
            "raise NotDirect('not the record type')",
        )
        for field in schema["fields"]:
            name = field["name"]
            if outer and name in self.overrides:
                written = self.source.bind(self.overrides[name])
                self.source.add(indent, f"{written}({value}, out)")
                continue
            item = self.source.var()
            self.source.add(indent, f"{item} = {value}.{name}")
            self.emit(field["type"], hints[name], item, indent)

    def enum(self, schema: Any, hint: Any, value: str, indent: int) -> None:
        check_enum(schema, hint)
        indexes = self.source.bind({hint(s): varint(i) for i, s in enumerate(schema["symbols"])})
        encoded = self.source.var()
        self.source.add(
            indent,
            f"if type({value}) is not {self.source.bind(hint)}: raise NotDirect('not the enum')",
            f"{encoded} = {indexes}.get({value})",
            f"if {encoded} is None: raise NotDirect('not a symbol of the schema')",
            f"out.append({encoded})",
        )


def write_direct(write: Write | None, head: bytes, record: Any) -> bytes | None:
    """``head`` then ``record`` written by ``write``; None when there is no direct writer
    or it does not take the record, and the caller's generic path decides."""
    if write is None:
        return None
    with_header = getattr(write, "with_header", None)  # the compiled core's: one copy
    if with_header is not None:
        try:
            whole: bytes = with_header(record, head)
        except Exception:  # NotDirect, or what Python raises for the value
            return None
        return whole
    parts = [head]
    try:
        write(record, parts)
    except Exception:  # NotDirect, or a value Python cannot encode (a lone surrogate)
        return None
    return b"".join(parts)


def compile_writer(
    schema: Any,
    record_type: type[Any],
    overrides: dict[str, Write] | None = None,
    within: Any = None,
    native: bool = True,
) -> Write | None:
    """A direct writer of ``record_type`` in the parsed ``schema`` (``write(record, out)``
    appends the body's parts to ``out``), or None when the schema uses something it does
    not write. ``overrides`` name fields of the record written by a function of it
    (``write(record, out)`` too, appending the field's whole encoding); ``within`` is a
    schema ``schema`` is part of, whose named types it may refer to. The writer is the
    compiled core's where it is installed (``native``: unless False), else generated
    Python; the two take the same records and write the same bytes."""
    named = named_types(within, {}) if within else {}
    compiler = _Compiler(overrides or {}, dict(named))
    try:
        compiler.emit(schema, record_type, "record", 1)
    except (TypeError, KeyError):
        return None
    if native:
        compiled = native_writer(schema, record_type, overrides or {}, named)
        if compiled is not None:
            return compiled
    write: Write = compiler.source.function(
        "write(record, out)", f"direct writer {record_type.__name__}"
    )
    return write
