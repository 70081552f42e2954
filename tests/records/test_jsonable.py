"""Records as plain JSON: the one walker the HTTP API and the projection share."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import pytest
from hypothesis import given, settings

from goaicore.projection.rows import stored_json
from goaicore.records.jsonable import jsonable
from tests.records.records_strategies import records


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for k, v in value.items() for s in [k, *_strings(v)]]
    if isinstance(value, list):
        return [s for v in value for s in _strings(v)]
    return []


@settings(max_examples=150, deadline=None)
@given(records)
def test_every_record_has_a_json_form_with_every_field(record: Any) -> None:
    plain = jsonable(record)
    assert json.loads(json.dumps(plain)) == plain
    assert set(plain) == {f.name for f in dataclasses.fields(record)}


@settings(max_examples=150, deadline=None)
@given(records)
def test_the_stored_form_has_no_nul_and_differs_only_there(record: Any) -> None:
    stored = stored_json(record)
    assert not any("\x00" in s for s in _strings(stored))
    if not any("\x00" in s for s in _strings(jsonable(record))):
        assert stored == jsonable(record)


def test_a_value_without_a_json_form_is_a_type_error() -> None:
    with pytest.raises(TypeError, match="complex"):
        jsonable({"raw": 1j})


def test_bytes_are_base64_text() -> None:
    assert jsonable({"sealed": b"\x00\xff"}) == {"sealed": "AP8="}
