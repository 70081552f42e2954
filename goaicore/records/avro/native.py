"""The compiled core's writer and reader: the direct writer's and reader's rules, run by
``goaicore_native``.

``goaicore_native`` (the ``native/`` crate, Rust under PyO3, built by maturin) writes a
record by walking a plan compiled here once per record type from the current schema
and the record's dataclass, with the same strictness as the generated Python writer:
exactly the declared types, else :class:`NotDirect` and the codec's generic path. It
reads records the same way, by a plan with the generated Python reader's rules: a
payload it does not take exactly as the schema says raises :class:`NotDirect`, and
fastavro decides. Where the extension is not installed, or ``GOAICORE_NATIVE=off``,
the generated Python writer and reader run instead; property tests hold each pair to
the same bytes and the same records.
"""

from __future__ import annotations

import dataclasses
import functools
import importlib
import os
import typing
from enum import Enum
from typing import Any

from goaicore.records.avro.generated import (
    NotDirect,
    SchemaCompiler,
    Source,
    Write,
    check_enum,
    is_record_type,
    named_type,
    named_types,
    nullable_member,
    record_hints,
    union_record_types,
)
from goaicore.records.convert import full_name
from goaicore.records.types import SnapshotMessage

Plan = tuple[Any, ...]

SWITCH = "GOAICORE_NATIVE"


@functools.cache
def native_module() -> Any | None:
    """``goaicore_native`` when it is installed and not switched off, else None."""
    if os.environ.get(SWITCH, "").strip() == "off":
        return None
    try:
        return importlib.import_module("goaicore_native")
    except ImportError:
        return None


class _Plans(SchemaCompiler[Plan]):
    """A schema's value as a plan, nested tuples: the kinds a writer and a reader plan
    alike (their records, unions and enums are each their own)."""

    def primitive(self, kind: str, name: str, indent: int) -> Plan:
        return (kind,)

    def timestamp(self, name: str, indent: int) -> Plan:
        return ("timestamp",)

    def array(self, items: Any, hint: Any, name: str, indent: int) -> Plan:
        return ("array", self.emit(items, hint, name, indent))

    def map(self, values: Any, hint: Any, name: str, indent: int) -> Plan:
        return ("map", self.emit(values, hint, name, indent))


class _Planner(_Plans):
    """The plan of a schema's value: nested tuples the native writer walks."""

    def __init__(self, overrides: dict[str, Write], named: dict[str, Any]) -> None:
        super().__init__(Source({}), named)
        self.overrides = overrides
        self.outer_seen = False

    def union(self, branches: list[Any], hint: Any, name: str, indent: int) -> Plan:
        if len(branches) == 2 and branches[0] == "null":
            return ("nullable", self.emit(branches[1], nullable_member(hint), name, indent))
        record_types = union_record_types(branches, hint)
        plans = [
            (record_type, self.emit(branch, record_type, name, indent))
            for branch, record_type in zip(branches, record_types, strict=True)
        ]
        return ("union", tuple(plans))

    def record(self, schema: Any, record_type: Any, name: str, indent: int) -> Plan:
        hints = record_hints(schema, record_type)
        outer, self.outer_seen = not self.outer_seen, True
        fields: list[Plan] = []
        for field in schema["fields"]:
            field_name = field["name"]
            if outer and field_name in self.overrides:
                override = self.overrides[field_name]
                # A history cache writes a snapshot's messages itself (no Python call).
                module = native_module()
                cached = module is not None and isinstance(override, module.Histories)
                fields.append(("history" if cached else "override", override))
            else:
                plan = self.emit(field["type"], hints[field_name], name, indent)
                fields.append(("value", field_name, plan))
        return ("record", record_type, tuple(fields))

    def enum(self, schema: Any, hint: Any, name: str, indent: int) -> Plan:
        check_enum(schema, hint)
        return ("enum", hint, {hint(s): i for i, s in enumerate(schema["symbols"])})


def native_writer(
    schema: Any, record_type: type[Any], overrides: dict[str, Write], named: dict[str, Any]
) -> Write | None:
    """The compiled core's writer of ``record_type`` (as ``compile_writer`` describes
    one), or None where the core is not installed or switched off."""
    module = native_module()
    if module is None:
        return None
    plan = _Planner(overrides, dict(named)).emit(schema, record_type, "record", 1)
    write: Write = module.Writer(plan, NotDirect)
    return write


class _ReadPlanner(_Plans):
    """The plan the native reader walks, with the generated Python reader's rules
    (``direct_reader``): a union's branch read as the member its name gives, fields the
    dataclass lacks read and dropped, an enum's symbols as the Enum's members."""

    def __init__(self) -> None:
        super().__init__(Source({}), {})

    def union(self, branches: list[Any], hint: Any, name: str, indent: int) -> Plan:
        members = [m for m in typing.get_args(hint) if m is not type(None)] or [hint]
        by_name = {full_name(m.__name__): m for m in members if is_record_type(m)}
        plans = []
        for branch in branches:
            named = named_type(branch)
            member = by_name.get(named, members[0]) if named is not None else members[0]
            plans.append(self.emit(branch, member, name, indent))
        return ("union", tuple(plans))

    def record(self, schema: Any, record_type: Any, name: str, indent: int) -> Plan:
        if not is_record_type(record_type):
            raise TypeError(f"record {schema['name']} read as {record_type!r}")
        hints = typing.get_type_hints(record_type)
        slots = [field.name for field in dataclasses.fields(record_type)]
        if not set(slots) <= {field["name"] for field in schema["fields"]}:
            raise TypeError(f"{record_type.__name__} has fields {schema['name']} lacks")
        fields = []
        for field in schema["fields"]:
            kept = field["name"] in slots
            plan = self.emit(field["type"], hints[field["name"]] if kept else Any, name, indent)
            fields.append((field["name"] if kept else None, plan))
        return ("record", record_type, slots, tuple(fields))

    def enum(self, schema: Any, hint: Any, name: str, indent: int) -> Plan:
        symbols = schema["symbols"]
        is_enum = isinstance(hint, type) and issubclass(hint, Enum)
        return ("enum", tuple(hint(s) for s in symbols) if is_enum else tuple(symbols))


def native_reader(schema: Any, record_type: type[Any]) -> Any | None:
    """The compiled core's reader of ``record_type`` (as ``compile_reader`` describes
    one: ``read(data, position) -> (record, end)``), or None where the core is not
    installed or switched off, or the schema uses something it does not read."""
    module = native_module()
    if module is None:
        return None
    try:
        plan = _ReadPlanner().emit(schema, record_type, "record", 1)
    except (TypeError, KeyError):
        return None
    return module.Reader(plan, NotDirect)


def native_histories(item_schema: Any, within: Any, cache_bytes: int) -> Any | None:
    """The compiled core's history cache for snapshots' messages (items of
    ``item_schema``, a part of the snapshot schema ``within``), keeping at most
    ``cache_bytes`` of their bytes; None where the core is not installed or switched off."""
    module = native_module()
    if module is None:
        return None
    named = named_types(within, {})
    plan = _Planner({}, dict(named)).emit(item_schema, SnapshotMessage, "record", 1)
    return module.Histories(plan, NotDirect, cache_bytes)
