"""The compiled core (``native/``, Rust under PyO3) writes what the Python writer writes.

``make test`` builds ``goaicore_native`` wherever a Rust toolchain is present; the
codecs and the snapshot encoder then write with it. Each test holds the two writers
to the same bytes, or the same refusal (``NotDirect``, after which the codec's generic
path decides): on any record, on records with a value of another type anywhere, and
on the snapshots the fold makes of any event sequence, encoded one after another as
the store worker encodes them.
"""

from __future__ import annotations

import dataclasses
import gc
import os
import subprocess
import sys
import weakref
from datetime import UTC, datetime, timedelta, timezone
from typing import Any
from zoneinfo import ZoneInfo

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from goaicore.fold import fold
from goaicore.fold.policy import policy_for_record_limit
from goaicore.records import ConversationEvent, ConversationSnapshot, LogPosition
from goaicore.records.avro import EncodeError, default_codecs
from goaicore.records.avro.direct_writer import compile_writer
from goaicore.records.avro.generated import NotDirect
from goaicore.records.avro.native import SWITCH, native_module
from goaicore.records.avro.snapshot_encoder import SnapshotEncoder
from tests.fold.conversations import conversation_log
from tests.native_core import needs_core, rust_toolchain
from tests.records.records_strangers import swap_stranger
from tests.records.records_strategies import events as any_events
from tests.records.records_strategies import records

FAST = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
CODECS = default_codecs()


def test_the_compiled_core_is_built_wherever_rust_is() -> None:
    if not rust_toolchain():
        pytest.skip("no Rust toolchain here: goaicore runs in pure Python")
    assert native_module() is not None, "make test builds native/ where cargo is present"
    codec = CODECS.snapshot
    assert type(codec._direct_write).__module__ == "goaicore_native"


def _writers(record: object) -> tuple[Any, Any]:
    codec = CODECS.by_type(record)
    schema, record_type = codec.writer.parsed, type(record)
    native = compile_writer(schema, record_type)
    pure = compile_writer(schema, record_type, native=False)
    assert native is not None
    assert pure is not None
    assert type(native).__module__ == "goaicore_native"
    assert type(pure).__module__ != "goaicore_native"
    return native, pure


def _written(write: Any, record: object) -> object:
    out: list[bytes] = []
    try:
        write(record, out)
    except NotDirect:
        return "not direct"
    except UnicodeEncodeError:
        return "not direct"  # the Python writer's own refusal of a lone surrogate
    return b"".join(out)


@needs_core
@FAST
@given(records)
def test_any_record_is_written_the_same_by_both_writers(record: object) -> None:
    native, pure = _writers(record)
    written = _written(native, record)
    assert isinstance(written, bytes)
    assert written == _written(pure, record)


@needs_core
@FAST
@given(records, st.data())
def test_both_writers_refuse_the_same_strangers(record: object, data: st.DataObject) -> None:
    native, pure = _writers(record)
    odd = swap_stranger(record, data)
    assert _written(native, odd) == _written(pure, odd)


@needs_core
@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("event_count", True),  # a bool is not an int
        ("event_count", 2**63),  # out of a long's range
        ("duplicate_count", 1.0),
        ("summary", "lone \ud800 surrogate"),
        ("title", type("Text", (str,), {})("a str subclass")),
        ("tags", ["a list", "not a tuple"]),
        ("attributes", {"key": 1}),
        ("started_at", __import__("datetime").datetime(2026, 1, 1)),  # naive
    ],
)
def test_values_of_other_types_are_refused_by_both(field: str, value: object) -> None:
    snapshot = ConversationSnapshot(conversation_id="c")
    object.__setattr__(snapshot, field, value)  # past the record's own normalizing
    native, pure = _writers(snapshot)
    assert _written(native, snapshot) == _written(pure, snapshot) == "not direct"


def _encoders() -> tuple[SnapshotEncoder, SnapshotEncoder]:
    native = SnapshotEncoder(CODECS.snapshot)
    pure = SnapshotEncoder(CODECS.snapshot, native=False)
    assert type(native._write).__module__ == "goaicore_native"
    return native, pure


def _same_snapshot_bytes(log: list[tuple[ConversationEvent, LogPosition]], limit: int) -> None:
    native, pure = _encoders()
    policy = policy_for_record_limit(limit)
    snapshot: ConversationSnapshot | None = None
    for event, position in log:
        snapshot = fold(snapshot, event, position, policy)
        assert _encoded(native, snapshot) == _encoded(pure, snapshot)


def _encoded(encoder: SnapshotEncoder, snapshot: ConversationSnapshot) -> object:
    try:
        return encoder.encode(snapshot)
    except EncodeError as err:
        return str(err)


@needs_core
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(conversation_log(max_steps=20), st.sampled_from([4096, 16384, 1_048_576]))
def test_any_conversation_folds_to_the_same_snapshot_bytes_in_both(
    log: list[tuple[ConversationEvent, LogPosition]], limit: int
) -> None:
    _same_snapshot_bytes(log, limit)


@needs_core
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(any_events, max_size=12), st.sampled_from([4096, 1_048_576]))
def test_any_event_sequence_folds_to_the_same_snapshot_bytes_in_both(
    events: list[ConversationEvent], limit: int
) -> None:
    log = [
        (dataclasses.replace(event, conversation_id="c"), LogPosition(partition=0, offset=i))
        for i, event in enumerate(events)
    ]
    _same_snapshot_bytes(log, limit)


@needs_core
@pytest.mark.parametrize(
    "stamp",
    [
        datetime(2026, 3, 1, 12, 30, 5, 999_999, tzinfo=timezone(timedelta(hours=5, minutes=30))),
        datetime(1901, 7, 4, 0, 0, 0, 1, tzinfo=timezone(timedelta(seconds=-3601, microseconds=7))),
        datetime(1969, 12, 31, 23, 59, 59, 999_500, tzinfo=UTC),
        datetime(9999, 12, 31, 23, 59, 59, 999_999, tzinfo=timezone(timedelta(hours=-23))),
        datetime(2026, 11, 1, 1, 30, tzinfo=ZoneInfo("America/New_York"), fold=0),
        datetime(2026, 11, 1, 1, 30, tzinfo=ZoneInfo("America/New_York"), fold=1),
    ],
)
def test_timestamps_in_any_zone_are_written_as_fastavro_writes_them(stamp: datetime) -> None:
    snapshot = ConversationSnapshot(conversation_id="c")
    object.__setattr__(snapshot, "started_at", stamp)  # as the record keeps it, any zone
    native, pure = _writers(snapshot)
    written = _written(native, snapshot)
    assert written == _written(pure, snapshot)
    codec = CODECS.snapshot
    assert codec._header + written == codec.encode_generic(snapshot)  # type: ignore[operator]


class _Owner:
    """Holds a writer whose override is its own method: a cycle through the writer (the
    pure-Python snapshot encoder's shape)."""

    def __init__(self) -> None:
        schema = CODECS.snapshot.writer.parsed
        self.write = compile_writer(
            schema, ConversationSnapshot, overrides={"messages": self.messages}
        )

    def messages(self, record: object, out: list[bytes]) -> None:
        out.append(b"\x00")


@needs_core
def test_a_writer_holding_its_owner_is_collected_with_it() -> None:
    """The cycle collector sees through the compiled writer to what its plan holds."""
    owner = _Owner()
    assert type(owner.write).__module__ == "goaicore_native"
    gone = weakref.ref(owner)
    del owner
    gc.collect()
    assert gone() is None


@needs_core
@pytest.mark.parametrize(("switch", "native"), [("off", False), ("auto", True), ("", True)])
def test_the_switch_picks_the_writer(switch: str, native: bool) -> None:
    code = (
        "from goaicore.records.avro import default_codecs\n"
        "print(type(default_codecs().snapshot._direct_write).__module__)"
    )
    env = {**os.environ, SWITCH: switch}
    found = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
    ).stdout.strip()
    assert (found == "goaicore_native") is native, found
