"""The compiled core's writer: the direct writer's rules, run by ``goaicore_native``.

``goaicore_native`` (the ``native/`` crate, Rust under PyO3, built by maturin) writes a
record by walking a plan compiled here once per record type from the current schema
and the record's dataclass, with the same strictness as the generated Python writer:
exactly the declared types, else :class:`NotDirect` and the codec's generic path.
Where the extension is not installed, or ``GOAICORE_NATIVE=off``, the generated
Python writer runs instead; property tests hold both to the same bytes.
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
    is_record_type,
    named_type,
)
from goaicore.records.convert import full_name

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


class _Planner(SchemaCompiler[Plan]):
    """The plan of a schema's value: nested tuples the native writer walks."""

    def __init__(self, overrides: dict[str, Write], named: dict[str, Any]) -> None:
        super().__init__(Source({}), named)
        self.overrides = overrides
        self.outer_seen = False

    def primitive(self, kind: str, name: str, indent: int) -> Plan:
        return (kind,)

    def timestamp(self, name: str, indent: int) -> Plan:
        return ("timestamp",)

    def array(self, items: Any, hint: Any, name: str, indent: int) -> Plan:
        return ("array", self.emit(items, hint, name, indent))

    def map(self, values: Any, hint: Any, name: str, indent: int) -> Plan:
        return ("map", self.emit(values, hint, name, indent))

    def union(self, branches: list[Any], hint: Any, name: str, indent: int) -> Plan:
        if len(branches) == 2 and branches[0] == "null":
            members = [m for m in typing.get_args(hint) if m is not type(None)] or [hint]
            return ("nullable", self.emit(branches[1], members[0], name, indent))
        by_name = {full_name(m.__name__): m for m in typing.get_args(hint) if is_record_type(m)}
        if len(by_name) != len(branches):
            raise TypeError(f"no direct writer for the union {branches!r}")
        plans = []
        for branch in branches:
            record_type = by_name[named_type(branch) or ""]
            plans.append((record_type, self.emit(branch, record_type, name, indent)))
        return ("union", tuple(plans))

    def record(self, schema: Any, record_type: Any, name: str, indent: int) -> Plan:
        if not is_record_type(record_type):
            raise TypeError(f"record {schema['name']} written from {record_type!r}")
        hints = typing.get_type_hints(record_type)
        names = [field["name"] for field in schema["fields"]]
        if set(names) != {field.name for field in dataclasses.fields(record_type)}:
            raise TypeError(f"{record_type.__name__} and {schema['name']} differ in fields")
        outer, self.outer_seen = not self.outer_seen, True
        fields: list[Plan] = []
        for field in schema["fields"]:
            field_name = field["name"]
            if outer and field_name in self.overrides:
                fields.append(("override", self.overrides[field_name]))
            else:
                plan = self.emit(field["type"], hints[field_name], name, indent)
                fields.append(("value", field_name, plan))
        return ("record", record_type, tuple(fields))

    def enum(self, schema: Any, hint: Any, name: str, indent: int) -> Plan:
        if not (isinstance(hint, type) and issubclass(hint, Enum)):
            raise TypeError(f"enum {schema['name']} written from {hint!r}")
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
