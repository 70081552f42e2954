"""The compiled core's writer: the direct writer's rules, run by ``goaicore_native``.

``goaicore_native`` (the ``native/`` crate, Rust under PyO3, built by maturin) writes a
record by walking a plan compiled here once per record type from the current schema
and the record's dataclass, with the same strictness as the generated Python writer:
exactly the declared types, else :class:`NotDirect` and the codec's generic path.
Where the extension is not installed, or ``GOAICORE_NATIVE=off``, the generated
Python writer runs instead; property tests hold both to the same bytes.
"""

from __future__ import annotations

import functools
import importlib
import os
from typing import Any

from goaicore.records.avro.generated import (
    NotDirect,
    SchemaCompiler,
    Source,
    Write,
    check_enum,
    nullable_member,
    record_hints,
    union_record_types,
)

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
                fields.append(("override", self.overrides[field_name]))
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
