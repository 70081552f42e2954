"""JSON schemas for tool parameters: built from type hints, checked against arguments.

The builder covers the types a tool signature uses in practice (str, int, float, bool,
None, list/tuple/set, dict, Literal, Enum, Optional/Union, Annotated descriptions,
dataclasses, TypedDicts and pydantic models). The checker covers the same keywords,
plus the common constraints of hand-written schemas; keywords it does not know are
accepted rather than guessed at.
"""

from __future__ import annotations

import dataclasses
import enum
import types
import typing
from collections.abc import Mapping, Sequence
from typing import Any, Literal, get_args, get_origin, is_typeddict

JSONSchema = dict[str, Any]
_PRIMITIVES: dict[Any, str] = {
    str: "string",
    int: "integer",
    float: "number",
    bool: "boolean",
    type(None): "null",
}


def schema_of(tp: Any) -> JSONSchema:
    """The JSON schema of a type hint; raises ``TypeError`` for a type it cannot express."""
    if tp is Any or tp is object:
        return {}
    if tp in _PRIMITIVES:
        return {"type": _PRIMITIVES[tp]}
    origin, args = get_origin(tp), get_args(tp)
    if origin is typing.Annotated:
        schema = dict(schema_of(args[0]))
        notes = [a for a in args[1:] if isinstance(a, str)]
        if notes:
            schema["description"] = " ".join(notes)
        return schema
    if origin is Literal:
        schema = {"enum": list(args)}
        kinds = {_PRIMITIVES.get(type(a)) for a in args}
        if len(kinds) == 1 and None not in kinds:
            schema["type"] = kinds.pop()
        return schema
    if origin in (typing.Union, types.UnionType):
        options = [schema_of(a) for a in args]
        return {"anyOf": options}
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        values = [m.value for m in tp]
        schema = {"enum": values}
        kinds = {_PRIMITIVES.get(type(v)) for v in values}
        if len(kinds) == 1 and None not in kinds:
            schema["type"] = kinds.pop()
        return schema
    if origin in (list, set, frozenset, Sequence) or tp in (list, set, frozenset):
        return {"type": "array", "items": schema_of(args[0])} if args else {"type": "array"}
    if origin is tuple or tp is tuple:
        if not args or (len(args) == 2 and args[1] is Ellipsis):
            return {"type": "array", "items": schema_of(args[0])} if args else {"type": "array"}
        return {
            "type": "array",
            "prefixItems": [schema_of(a) for a in args],
            "minItems": len(args),
            "maxItems": len(args),
        }
    if origin in (dict, Mapping) or tp is dict:
        if args and args[0] is not str:
            raise TypeError(f"JSON object keys are strings; cannot express {tp!r}")
        return (
            {"type": "object", "additionalProperties": schema_of(args[1])}
            if args
            else {"type": "object"}
        )
    if isinstance(tp, type) and hasattr(tp, "model_json_schema"):
        return dict(tp.model_json_schema())  # a pydantic model
    if is_typeddict(tp):
        hints = typing.get_type_hints(tp, include_extras=True)
        required = sorted(getattr(tp, "__required_keys__", set(hints)))
        return _object({k: schema_of(v) for k, v in hints.items()}, required)
    if dataclasses.is_dataclass(tp) and isinstance(tp, type):
        hints = typing.get_type_hints(tp, include_extras=True)
        fields = dataclasses.fields(tp)
        required = [
            f.name
            for f in fields
            if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
        ]
        return _object({f.name: schema_of(hints[f.name]) for f in fields}, required)
    raise TypeError(f"cannot build a JSON schema for {tp!r}")


def _object(properties: dict[str, JSONSchema], required: list[str]) -> JSONSchema:
    return {
        "type": "object",
        "properties": properties,
        "required": required,
        "additionalProperties": False,
    }


def check(schema: Mapping[str, Any], value: Any, path: str = "$") -> str | None:
    """The first way ``value`` violates ``schema`` (as ``path: reason``), or None."""
    if "anyOf" in schema or "oneOf" in schema:
        options = schema.get("anyOf") or schema.get("oneOf") or []
        if not any(check(o, value, path) is None for o in options):
            return f"{path}: matches none of the allowed forms"
    if "enum" in schema and value not in schema["enum"]:
        return f"{path}: must be one of {schema['enum']!r}"
    if "const" in schema and value != schema["const"]:
        return f"{path}: must be {schema['const']!r}"
    expected = schema.get("type")
    if expected is not None:
        kinds = [expected] if isinstance(expected, str) else list(expected)
        if not any(_is_type(value, k) for k in kinds):
            return f"{path}: expected {' or '.join(kinds)}, got {_json_type(value)}"
    if isinstance(value, dict):
        return _check_object(schema, value, path)
    if isinstance(value, list):
        return _check_array(schema, value, path)
    if isinstance(value, str):
        if len(value) < schema.get("minLength", 0):
            return f"{path}: shorter than {schema['minLength']}"
        if "maxLength" in schema and len(value) > schema["maxLength"]:
            return f"{path}: longer than {schema['maxLength']}"
    if _is_type(value, "number"):
        if "minimum" in schema and value < schema["minimum"]:
            return f"{path}: less than {schema['minimum']}"
        if "maximum" in schema and value > schema["maximum"]:
            return f"{path}: more than {schema['maximum']}"
    return None


def _check_object(schema: Mapping[str, Any], value: dict[str, Any], path: str) -> str | None:
    properties: Mapping[str, Any] = schema.get("properties", {})
    for name in schema.get("required", []):
        if name not in value:
            return f"{path}: missing required property {name!r}"
    extra = schema.get("additionalProperties", True)
    for key, item in value.items():
        if key in properties:
            problem = check(properties[key], item, f"{path}.{key}")
        elif extra is False:
            problem = f"{path}: unexpected property {key!r}"
        elif isinstance(extra, dict):
            problem = check(extra, item, f"{path}.{key}")
        else:
            problem = None
        if problem:
            return problem
    return None


def _check_array(schema: Mapping[str, Any], value: list[Any], path: str) -> str | None:
    if len(value) < schema.get("minItems", 0):
        return f"{path}: fewer than {schema['minItems']} items"
    if "maxItems" in schema and len(value) > schema["maxItems"]:
        return f"{path}: more than {schema['maxItems']} items"
    prefix = schema.get("prefixItems", [])
    for i, item in enumerate(value):
        item_schema = prefix[i] if i < len(prefix) else schema.get("items")
        if isinstance(item_schema, dict):
            problem = check(item_schema, item, f"{path}[{i}]")
            if problem:
                return problem
    return None


def _is_type(value: Any, kind: str) -> bool:
    if kind == "integer":
        return (isinstance(value, int) and not isinstance(value, bool)) or (
            isinstance(value, float) and value.is_integer()
        )
    if kind == "number":
        return isinstance(value, int | float) and not isinstance(value, bool)
    return _json_type(value) == kind


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    if isinstance(value, dict):
        return "object"
    return type(value).__name__


def coerce(tp: Any, value: Any) -> Any:
    """Turn checked JSON into the Python type the tool asked for (Enum, dataclass...)."""
    origin, args = get_origin(tp), get_args(tp)
    if origin is typing.Annotated:
        return coerce(args[0], value)
    if origin in (typing.Union, types.UnionType):
        for option in args:
            if check(schema_of(option), value) is None:
                return coerce(option, value)
        return value
    if tp is int and isinstance(value, float):
        return int(value)
    if tp is float and isinstance(value, int):
        return float(value)
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        return tp(value)
    if isinstance(tp, type) and hasattr(tp, "model_validate"):
        return tp.model_validate(value)
    if dataclasses.is_dataclass(tp) and isinstance(tp, type) and isinstance(value, dict):
        hints = typing.get_type_hints(tp, include_extras=True)
        return tp(**{k: coerce(hints.get(k, Any), v) for k, v in value.items()})
    if isinstance(value, list) and (origin in (list, set, frozenset, tuple, Sequence)):
        items = [coerce(args[0] if args else Any, v) for v in value]
        if origin is tuple and args and not (len(args) == 2 and args[1] is Ellipsis):
            items = [coerce(a, v) for a, v in zip(args, value, strict=False)]
        return items if origin in (list, Sequence) else origin(items)
    return value
