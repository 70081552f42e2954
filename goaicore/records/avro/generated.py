"""What the direct reader and the direct writer share: generated straight-line Python.

Both compile one function per record type from the current schema and the record's
dataclass; this module holds the buffer of generated lines, the names the code refers
to, and the exception by which either hands a value back to fastavro.
"""

from __future__ import annotations

import dataclasses
from typing import Any

PRIMITIVES = ("null", "boolean", "int", "long", "string")


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


def named_type(schema: Any) -> str | None:
    """The full name of a record or enum schema, or of a reference to one; else None."""
    if isinstance(schema, dict) and schema.get("type") in ("record", "enum"):
        name: str = schema["name"]
        return name
    if isinstance(schema, str) and schema not in PRIMITIVES:
        return schema
    return None
