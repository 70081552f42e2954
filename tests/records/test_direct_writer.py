"""The direct writer agrees with fastavro: same bytes, and the codec's check has the say.

``Codec.encode`` writes a record of exactly its declared types with the generated direct
writer and hands anything else to ``encode_generic`` (convert, check, fastavro). Each
test compares the two: on any valid record, and on records with a field (at any depth)
swapped for a value of another type, where both must give the same bytes or the same
error.
"""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime, timedelta, timezone
from enum import Enum
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from goaicore.records.avro import EncodeError, default_codecs
from goaicore.records.avro.codec import Codec
from goaicore.records.avro.snapshot_encoder import SnapshotEncoder
from goaicore.records.types import ConversationSnapshot, ReplyStatus
from tests.records.records_samples import ALL_SAMPLES
from tests.records.records_strategies import records

FAST = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
CODECS = default_codecs()


def _codec(record: object) -> Codec[Any]:
    return CODECS.by_type(record)


def _direct(codec: Codec[Any], record: object) -> bytes:
    write = codec._direct_write
    assert write is not None
    parts: list[bytes] = [codec._header]
    write(record, parts)
    return b"".join(parts)


def _outcome(encode: Any, record: object) -> object:
    try:
        return encode(record)
    except EncodeError as err:
        return ("error", str(err), err.problems)


def test_every_record_type_and_the_snapshot_encoder_write_directly() -> None:
    for codec in CODECS.all:
        assert codec._direct_write is not None, codec.name
    assert SnapshotEncoder(CODECS.snapshot).incremental


@FAST
@given(records)
def test_any_record_writes_fastavros_bytes_directly(record: object) -> None:
    codec = _codec(record)
    expected = codec.encode_generic(record)
    assert _direct(codec, record) == expected  # the direct writer took it itself
    assert codec.encode(record) == expected


@pytest.mark.parametrize(("name", "record"), ALL_SAMPLES)
def test_every_sample_record_is_written_directly(name: str, record: object) -> None:
    codec = _codec(record)
    assert _direct(codec, record) == codec.encode_generic(record)


class _Other(Enum):
    OK = "ok"  # a ReplyStatus value, in another enum


# Values of every kind the records hold, and of kinds they never should.
STRANGERS = st.sampled_from(
    [
        None,
        True,
        False,
        0,
        -1,
        2**31,
        2**40,
        2**63,
        -(2**64),
        1.5,
        "",
        "text",
        "\ud800",  # a lone surrogate has no UTF-8 form
        b"bytes",
        (),
        ("a",),
        ["a"],
        {},
        {"k": "v"},
        {"k": 1},
        {1: "v"},
        ReplyStatus.OK,
        _Other.OK,
        datetime(2026, 1, 1),  # naive
        datetime(2026, 1, 1, 12, 0, 0, 123456, tzinfo=UTC),
        datetime(2026, 1, 1, tzinfo=timezone(timedelta(hours=-5))),
        object(),
    ]
)


def _swap(record: Any, data: st.DataObject) -> Any:
    """``record`` with one field, here or in a nested record, swapped for a stranger."""
    fields = [field.name for field in dataclasses.fields(record)]
    name = data.draw(st.sampled_from(fields))
    value = getattr(record, name)
    candidates: tuple[Any, ...] = value if isinstance(value, tuple) else (value,)
    nested = [item for item in candidates if dataclasses.is_dataclass(item)]
    go_deeper: bool = bool(nested) and data.draw(st.booleans())
    if go_deeper:
        inner = data.draw(st.sampled_from(nested))
        swapped = _swap(inner, data)
        if isinstance(value, tuple):
            value = tuple(swapped if item is inner else item for item in value)
        else:
            value = swapped
    else:
        value = data.draw(STRANGERS)
    copy = object.__new__(type(record))
    for field in fields:
        object.__setattr__(copy, field, getattr(record, field))
    object.__setattr__(copy, name, value)  # past __post_init__, as a careless caller could
    return copy


@FAST
@given(records, st.data())
def test_a_record_with_a_stranger_anywhere_encodes_as_the_generic_path_does(
    record: object, data: st.DataObject
) -> None:
    codec = _codec(record)
    odd = _swap(record, data)
    assert _outcome(codec.encode, odd) == _outcome(codec.encode_generic, odd)


SAMPLE_SNAPSHOTS = [r for _, r in ALL_SAMPLES if isinstance(r, ConversationSnapshot)]


@FAST
@given(records, st.data())
def test_the_snapshot_encoder_agrees_on_strangers_too(record: object, data: st.DataObject) -> None:
    if type(record).__name__ != "ConversationSnapshot":
        record = data.draw(
            st.sampled_from(
                [r for _, r in ALL_SAMPLES if type(r).__name__ == "ConversationSnapshot"]
            )
        )
    encoder = SnapshotEncoder(CODECS.snapshot)
    encoder.encode(record)  # type: ignore[arg-type]  # its history remembered
    odd = _swap(record, data)
    assert _outcome(encoder.encode, odd) == _outcome(CODECS.snapshot.encode_generic, odd)
