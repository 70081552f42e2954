"""The JSON text writer agrees with ``json.dumps(jsonable(...))``: the same text, or the
same error, for any record and for records with a stranger value at any depth."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from goaicore.projection.rows import clean, stored_json, stored_json_text
from goaicore.records import EVENT_BODY_TYPES, ConversationEvent, ConversationSnapshot
from goaicore.records.json_text import _same, _writer, compact, json_text
from goaicore.records.jsonable import jsonable
from tests.records.records_samples import ALL_SAMPLES
from tests.records.records_strangers import swap_stranger
from tests.records.records_strategies import records

FAST = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _generic(record: object) -> object:
    try:
        return compact(jsonable(record, clean))
    except TypeError as err:
        return ("error", str(err))


def _direct(record: object) -> object:
    try:
        return json_text(record, clean)
    except TypeError as err:
        return ("error", str(err))


def test_every_record_type_has_a_compiled_writer() -> None:
    for record_type in [*EVENT_BODY_TYPES, ConversationEvent, ConversationSnapshot]:
        assert _writer(record_type, _same) is not None, record_type.__name__
        assert _writer(record_type, clean) is not None, record_type.__name__


@FAST
@given(records)
def test_any_record_is_written_as_the_generic_path_writes_it(record: object) -> None:
    assert json_text(record) == compact(jsonable(record))
    stored = stored_json_text(record)
    assert stored == compact(stored_json(record))
    assert json.loads(stored) == stored_json(record)


@pytest.mark.parametrize(("name", "record"), ALL_SAMPLES)
def test_every_sample_record_is_written_directly(name: str, record: object) -> None:
    write = _writer(type(record), clean)
    assert write is not None
    parts: list[str] = []
    write(record, parts)  # the direct writer took it itself
    assert "".join(parts) == compact(jsonable(record, clean))


@FAST
@given(records, st.data())
def test_a_record_with_a_stranger_anywhere_is_written_as_the_generic_path_writes_it(
    record: Any, data: st.DataObject
) -> None:
    odd = swap_stranger(record, data)
    assert _direct(odd) == _generic(odd)


def test_nul_in_text_is_stored_as_the_replacement_character() -> None:
    from goaicore.records import UserMessage

    assert json.loads(stored_json_text(UserMessage(text="a\x00b")))["text"] == "a\ufffdb"


@dataclasses.dataclass(frozen=True)
class _Node:
    name: str
    child: _Node | None = None


def test_a_record_that_holds_its_own_type_is_written_the_generic_way() -> None:
    node = _Node("a", _Node("b"))
    assert _writer(_Node, _same) is None
    assert json_text(node) == '{"name":"a","child":{"name":"b","child":null}}'


@dataclasses.dataclass(frozen=True)
class _Empty:
    pass


@dataclasses.dataclass(frozen=True)
class _TwoEmpty:
    first: _Empty
    second: _Empty


def test_an_empty_record_met_twice_is_written_directly() -> None:
    assert _writer(_TwoEmpty, _same) is not None
    assert json_text(_TwoEmpty(_Empty(), _Empty())) == '{"first":{},"second":{}}'


def test_keys_that_meet_once_cleaned_are_written_as_the_generic_path_writes_them() -> None:
    from goaicore.records import GameEvent

    event = GameEvent(kind="k", text="t", attributes={"a\x00": "x", "a\ufffd": "y"})
    assert stored_json_text(event) == compact(stored_json(event))
    assert json.loads(stored_json_text(event))["attributes"] == {"a\ufffd": "y"}
