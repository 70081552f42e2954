"""``evolve`` is ``dataclasses.replace`` for snapshots, only faster."""

from __future__ import annotations

import dataclasses
import typing

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from goaicore.fold.evolve import SnapshotChanges, evolve
from goaicore.records import ConversationSnapshot
from tests.records.records_strategies import snapshots

FIELDS = [field.name for field in dataclasses.fields(ConversationSnapshot)]


def test_the_changes_type_names_every_snapshot_field_with_its_type() -> None:
    declared = typing.get_type_hints(SnapshotChanges)
    fields = typing.get_type_hints(ConversationSnapshot)
    assert declared == fields


@settings(max_examples=100, deadline=None)
@given(snapshots, snapshots, st.sets(st.sampled_from(FIELDS)))
def test_evolve_equals_replace_for_any_fields_changed(
    snapshot: ConversationSnapshot, other: ConversationSnapshot, changed: set[str]
) -> None:
    changes = {name: getattr(other, name) for name in changed}
    evolved = evolve(snapshot, **changes)
    assert evolved == dataclasses.replace(snapshot, **changes)
    assert evolved is not snapshot
    with pytest.raises(dataclasses.FrozenInstanceError):
        evolved.event_count = 1  # type: ignore[misc]


def test_an_unknown_field_is_a_type_error_naming_it() -> None:
    with pytest.raises(TypeError, match="no_such_thing"):
        evolve(ConversationSnapshot(conversation_id="c"), no_such_thing=1)  # type: ignore[call-arg]
