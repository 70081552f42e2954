"""@tool: schemas from hints and docstrings, explicit schemas, invocation outcomes."""

from __future__ import annotations

import asyncio
import enum
import json
from dataclasses import dataclass
from typing import Annotated, Any, Literal, TypedDict

import pytest

from goaicore import Tool, tool
from goaicore.conversation.tool_schema import check, schema_of


class Side(enum.Enum):
    HOME = "home"
    AWAY = "away"


@dataclass
class Venue:
    name: str
    capacity: int = 0


class Opaque:
    """A type with no JSON schema."""


class Player(TypedDict):
    name: str
    age: int


def test_schema_from_hints_and_google_docstring() -> None:
    @tool
    def get_score(
        team: str,
        season: int = 2024,
        side: Side = Side.HOME,
        kind: Literal["live", "final"] | None = None,
        tags: list[str] | None = None,
        weights: dict[str, float] | None = None,
        note: Annotated[str, "free text"] = "",
    ) -> dict[str, Any]:
        """Current score of a team.

        Used by the assistant during matches.

        Args:
            team: The team name,
                as the league spells it.
            season (int): The season year.

        Returns:
            The score.
        """
        return {}

    assert get_score.name == "get_score"
    assert (
        get_score.description == "Current score of a team.\n\nUsed by the assistant during matches."
    )
    p = get_score.parameters
    assert p["required"] == ["team"]
    assert p["additionalProperties"] is False
    props = p["properties"]
    assert props["team"] == {
        "type": "string",
        "description": "The team name, as the league spells it.",
    }
    assert props["season"] == {
        "type": "integer",
        "description": "The season year.",
        "default": 2024,
    }
    assert props["side"] == {"enum": ["home", "away"], "type": "string", "default": "home"}
    assert props["kind"]["anyOf"] == [
        {"enum": ["live", "final"], "type": "string"},
        {"type": "null"},
    ]
    assert props["tags"]["anyOf"][0] == {"type": "array", "items": {"type": "string"}}
    assert props["weights"]["anyOf"][0] == {
        "type": "object",
        "additionalProperties": {"type": "number"},
    }
    assert props["note"]["description"] == "free text"


def test_rest_docstring_and_structured_types() -> None:
    @tool
    async def book(venue: Venue, player: Player, seats: tuple[int, int]) -> str:
        """Book seats.

        :param venue: where
        :param player: who
        """
        return "ok"

    props = book.parameters["properties"]
    assert book.is_async
    assert props["venue"]["required"] == ["name"]
    assert props["venue"]["description"] == "where"
    assert props["player"]["properties"]["age"] == {"type": "integer"}
    assert props["seats"]["prefixItems"] == [{"type": "integer"}, {"type": "integer"}]


def test_explicit_schema_and_overrides() -> None:
    schema = {
        "type": "object",
        "properties": {"q": {"type": "string", "minLength": 2}},
        "required": ["q"],
    }

    @tool(name="search-docs", description="Search the docs.", parameters=schema)
    def search(**kwargs: Any) -> list[str]:
        return [kwargs["q"]]

    assert search.name == "search-docs"
    assert search.parameters == schema
    assert asyncio.run(search.invoke('{"q": "kafka"}')).text == '["kafka"]'
    outcome = asyncio.run(search.invoke('{"q": "k"}'))
    assert outcome.is_error
    assert "shorter than 2" in outcome.text


def test_invalid_definitions_fail_at_decoration() -> None:
    with pytest.raises(ValueError, match="must match"):
        tool(name="has space")(lambda: 1)
    with pytest.raises(ValueError, match="must be an object"):
        tool(name="t", parameters={"type": "string"})(lambda: 1)

    def takes(x: Opaque) -> str:
        return ""

    with pytest.raises(TypeError, match="parameter 'x'"):
        tool(takes)

    class Local:
        pass

    def local(x: Local) -> str:
        return ""

    with pytest.raises(TypeError, match="cannot resolve its type hints"):
        tool(local)
    with pytest.raises(TypeError, match="keys are strings"):
        schema_of(dict[int, str])


@tool
def add(a: int, b: int = 1) -> int:
    """Add two numbers."""
    return a + b


@tool
def explode(reason: str) -> str:
    """Always fails."""
    raise RuntimeError(reason)


@tool
def nothing() -> None:
    """Returns nothing."""


@tool
def empty() -> str:
    """Returns the empty string."""
    return ""


@tool
def venue_name(venue: Venue, side: Side) -> dict[str, Any]:
    """Echo typed arguments."""
    return {"venue": venue.name, "type": type(venue).__name__, "side": side.name}


@pytest.mark.parametrize(
    ("t", "arguments", "expected", "is_error"),
    [
        (add, '{"a": 2, "b": 3}', "5", False),
        (add, '{"a": 2.0}', "3", False),
        (add, "", "error: the arguments do not match the schema: $: missing required", True),
        (add, "{not json", "error: the arguments are not valid JSON", True),
        (add, "[1]", "error: the arguments must be a JSON object", True),
        (add, '{"a": "2"}', "error: the arguments do not match the schema: $.a: expected", True),
        (
            add,
            '{"a": 1, "c": 1}',
            "error: the arguments do not match the schema: $: unexpected",
            True,
        ),
        (
            explode,
            '{"reason": "no data"}',
            "error: tool 'explode' failed: RuntimeError: no data",
            True,
        ),
        (nothing, "{}", "error: tool 'nothing' returned no result", True),
        (empty, "{}", "", False),
        (
            venue_name,
            '{"venue": {"name": "Elland Road"}, "side": "away"}',
            '{"venue": "Elland Road", "type": "Venue", "side": "AWAY"}',
            False,
        ),
        (venue_name, '{"venue": {"name": 1}, "side": "away"}', "error: the arguments do not", True),
    ],
)
async def test_invoke_outcomes(t: Tool, arguments: str, expected: str, is_error: bool) -> None:
    outcome = await t.invoke(arguments)
    assert outcome.is_error is is_error
    assert outcome.text.startswith(expected) if expected else outcome.text == ""


async def test_results_are_formatted_as_json_unless_text() -> None:
    @tool
    def info() -> Venue:
        """A dataclass result."""
        return Venue("York", 8500)

    assert json.loads((await info.invoke("{}")).text) == {"name": "York", "capacity": 8500}


async def test_sync_tools_run_off_the_event_loop() -> None:
    loop_thread: list[bool] = []

    @tool
    def where() -> str:
        """Report whether it runs on a loop."""
        try:
            asyncio.get_running_loop()
            loop_thread.append(True)
        except RuntimeError:
            loop_thread.append(False)
        return "ok"

    assert (await where.invoke("{}")).text == "ok"
    assert loop_thread == [False]


@pytest.mark.parametrize(
    ("schema", "value", "problem"),
    [
        ({"type": ["string", "null"]}, None, None),
        ({"type": "integer", "minimum": 1}, 0, "less than 1"),
        ({"type": "number", "maximum": 1}, 2.5, "more than 1"),
        ({"type": "array", "minItems": 1}, [], "fewer than 1"),
        ({"type": "array", "maxItems": 1, "items": {"type": "string"}}, ["a", "b"], "more than 1"),
        ({"type": "array", "items": {"type": "string"}}, ["a", 1], "$[1]: expected string"),
        ({"type": "string", "maxLength": 1}, "ab", "longer than 1"),
        ({"const": 3}, 4, "must be 3"),
        ({"oneOf": [{"type": "string"}, {"type": "integer"}]}, True, "matches none"),
        ({"type": "boolean"}, 1, "expected boolean, got integer"),
        ({"type": "object", "additionalProperties": {"type": "integer"}}, {"a": "x"}, "$.a"),
        ({"x-unknown-keyword": 1}, object(), None),
    ],
)
def test_schema_checker(schema: dict[str, Any], value: Any, problem: str | None) -> None:
    result = check(schema, value)
    if problem is None:
        assert result is None
    else:
        assert result is not None
        assert problem in result
