"""The registry of event body types: every part of the system reads it, so it must hold
every body type the schema has, in the schema's order, and each must be whole."""

from __future__ import annotations

import dataclasses
import typing
from pathlib import Path

import pytest

from goaicore.fold import fold
from goaicore.records import EVENT_TYPES, LogPosition
from goaicore.records.avro.schemas import load_current
from goaicore.records.event_types import BODY_TYPE_NAMES, summary
from goaicore.records.types import EventBody
from goaicore.sealing.content import FIELDS
from tests.records.records_samples import EVENT_SAMPLES

TEMPLATES = Path(__file__).parents[2] / "services" / "goaicore_console" / "templates"


def _schema_body_names() -> list[str]:
    schema = load_current("ConversationEvent").raw
    (body,) = [f for f in schema["fields"] if f["name"] == "body"]
    return [branch["name"] if isinstance(branch, dict) else branch for branch in body["type"]]


def test_the_registry_holds_the_schemas_body_types_in_the_unions_order() -> None:
    assert [name.rsplit(".", 1)[-1] for name in _schema_body_names()] == list(BODY_TYPE_NAMES)
    assert {t.body for t in EVENT_TYPES} == set(typing.get_args(EventBody))


@pytest.mark.parametrize("entry", EVENT_TYPES, ids=BODY_TYPE_NAMES)
def test_each_entry_is_whole(entry: typing.Any) -> None:
    fields = {f.name: f for f in dataclasses.fields(entry.body)}
    assert set(entry.content) <= set(fields)
    assert FIELDS[entry.body] is entry.content  # sealing reads the registry, not a copy
    if entry.searchable is not None:
        assert entry.searchable in entry.content  # searchable words are content: sealed too
    assert (TEMPLATES / "events" / f"{entry.name}.html").is_file()


@pytest.mark.parametrize("label", sorted(EVENT_SAMPLES))
def test_every_sample_folds_by_its_rule_and_reads_on_one_line(label: str) -> None:
    event = EVENT_SAMPLES[label]
    snapshot = fold(None, event, LogPosition(partition=0, offset=0))
    assert not any("unknown body" in note for note in snapshot.anomalies)
    line = summary(event.body)
    assert line
    assert "\n" not in line
    assert line != type(event.body).__name__
