"""What the direct reader and the direct writer share: generated straight-line Python.

Both compile one function per record type from the current schema and the record's
dataclass; this module holds the buffer of generated lines, the names the code refers
to, and the exception by which either hands a value back to fastavro. The JSON text
writer (``goaicore.records.json_text``) uses the same buffer and exception.
"""

from __future__ import annotations

import dataclasses
import typing
from collections.abc import Callable
from enum import Enum
from typing import Any, Generic, TypeVar

from goaicore.records.convert import full_name

PRIMITIVES = ("null", "boolean", "int", "long", "string", "bytes")

T = TypeVar("T")

Write = Callable[[Any, list[bytes]], None]
"""A record writer: ``write(record, out)`` appends the record's Avro body to ``out``."""


class NotDirect(Exception):
    """A value the direct reader or writer does not take as is; fastavro decides."""


class Source:
    """A generated function's lines and the names its code refers to."""

    def __init__(self, namespace: dict[str, Any]) -> None:
        self.lines: list[str] = []
        self.namespace: dict[str, Any] = {"NotDirect": NotDirect, **namespace}
        self.count = 0

    def var(self) -> str:
        """A fresh local variable name."""
        self.count += 1
        return f"v{self.count}"

    def bind(self, value: Any) -> str:
        """A global name for ``value`` in the generated code."""
        name = f"h{len(self.namespace)}"
        self.namespace[name] = value
        return name

    def add(self, indent: int, *lines: str) -> None:
        self.lines.extend("    " * indent + line for line in lines)

    def function(self, signature: str, label: str, *last: str) -> Any:
        """The compiled function ``signature`` whose body is the lines, then ``last``."""
        code = "\n".join([f"def {signature}:", *self.lines, *("    " + line for line in last)])
        exec(compile(code, f"<{label}>", "exec"), self.namespace)
        return self.namespace[signature.split("(")[0]]


def plain_primitive(schema: Any) -> Any:
    """``{"type": "long"}`` as ``"long"``; any other schema as it is."""
    if isinstance(schema, dict) and schema["type"] in PRIMITIVES and "logicalType" not in schema:
        return schema["type"]
    return schema


def is_record_type(hint: Any) -> bool:
    return isinstance(hint, type) and dataclasses.is_dataclass(hint)


def nullable_member(hint: Any) -> Any:
    """The type of ``["null", T]``'s T, from the hint ``T | None``."""
    return ([m for m in typing.get_args(hint) if m is not type(None)] or [hint])[0]


def union_record_types(branches: list[Any], hint: Any) -> list[Any]:
    """The dataclass of each branch of a union of records, in the schema's order;
    TypeError when the hint does not name one per branch."""
    by_name = {full_name(m.__name__): m for m in typing.get_args(hint) if is_record_type(m)}
    if len(by_name) != len(branches):
        raise TypeError(f"no direct code for the union {branches!r}")
    return [by_name[named_type(branch) or ""] for branch in branches]


def record_hints(schema: Any, record_type: Any) -> dict[str, Any]:
    """The type hints of the dataclass written or read as the record ``schema``;
    TypeError when it is no dataclass or its fields are not the schema's."""
    if not is_record_type(record_type):
        raise TypeError(f"record {schema['name']} written from {record_type!r}")
    names = [field["name"] for field in schema["fields"]]
    if set(names) != {field.name for field in dataclasses.fields(record_type)}:
        raise TypeError(f"{record_type.__name__} and {schema['name']} differ in fields")
    return typing.get_type_hints(record_type)


def check_enum(schema: Any, hint: Any) -> None:
    """TypeError unless ``hint`` is an Enum the enum ``schema`` is written from."""
    if not (isinstance(hint, type) and issubclass(hint, Enum)):
        raise TypeError(f"enum {schema['name']} written from {hint!r}")


def named_type(schema: Any) -> str | None:
    """The full name of a record or enum schema, or of a reference to one; else None."""
    if isinstance(schema, dict) and schema.get("type") in ("record", "enum"):
        name: str = schema["name"]
        return name
    if isinstance(schema, str) and schema not in PRIMITIVES:
        return schema
    return None


def named_types(schema: Any, named: dict[str, Any]) -> dict[str, Any]:
    """Every named type defined in ``schema``, by full name."""
    if isinstance(schema, list):
        for branch in schema:
            named_types(branch, named)
    elif isinstance(schema, dict):
        if schema.get("type") in ("record", "enum", "fixed"):
            named[schema["name"]] = schema
        for field in schema.get("fields", ()):
            named_types(field["type"], named)
        for key in ("items", "values"):
            if key in schema:
                named_types(schema[key], named)
        if isinstance(schema.get("type"), dict | list):
            named_types(schema["type"], named)
    return named


class SchemaCompiler(Generic[T]):
    """Walks a schema and emits, kind by kind, the code for a value of it.

    The direct reader and the direct writer each say what each kind's code is (adding
    lines to ``source``; the native writer's plan returns each kind's plan instead);
    named types met again are looked up in ``named``.
    """

    def __init__(self, source: Source, named: dict[str, Any]) -> None:
        self.source = source
        self.named = named  # named schemas by full name

    def emit(self, schema: Any, hint: Any, name: str, indent: int) -> T:
        """The lines for the value ``name`` of ``schema``, as the Python type ``hint``."""
        schema = plain_primitive(schema)
        if isinstance(schema, str) and schema not in PRIMITIVES:
            return self.emit(self.named[schema], hint, name, indent)  # a named type again
        if isinstance(schema, str):
            return self.primitive(schema, name, indent)
        if isinstance(schema, list):
            return self.union(schema, hint, name, indent)
        kind = schema["type"]
        if kind == "long" and schema.get("logicalType") == "timestamp-millis":
            return self.timestamp(name, indent)
        if kind == "record":
            self.named[schema["name"]] = schema
            return self.record(schema, hint, name, indent)
        if kind == "enum":
            self.named[schema["name"]] = schema
            return self.enum(schema, hint, name, indent)
        if kind == "array":
            return self.array(schema["items"], typing.get_args(hint)[0], name, indent)
        if kind == "map":
            args = typing.get_args(hint)
            return self.map(schema["values"], args[1] if len(args) == 2 else Any, name, indent)
        raise TypeError(f"no direct code for {schema!r}")

    def primitive(self, kind: str, name: str, indent: int) -> T:
        raise NotImplementedError

    def union(self, branches: list[Any], hint: Any, name: str, indent: int) -> T:
        raise NotImplementedError

    def timestamp(self, name: str, indent: int) -> T:
        raise NotImplementedError

    def record(self, schema: Any, record_type: Any, name: str, indent: int) -> T:
        raise NotImplementedError

    def enum(self, schema: Any, hint: Any, name: str, indent: int) -> T:
        raise NotImplementedError

    def array(self, items: Any, hint: Any, name: str, indent: int) -> T:
        raise NotImplementedError

    def map(self, values: Any, hint: Any, name: str, indent: int) -> T:
        raise NotImplementedError
