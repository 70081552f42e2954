"""The direct writer agrees with fastavro: same bytes, and the codec's check has the say.

``Codec.encode`` writes a record of exactly its declared types with the generated direct
writer and hands anything else to ``encode_generic`` (convert, check, fastavro). Each
test compares the two: on any valid record, and on records with a field (at any depth)
swapped for a value of another type, where both must give the same bytes or the same
error.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from goaicore.records.avro import EncodeError, default_codecs
from goaicore.records.avro.codec import Codec
from goaicore.records.avro.snapshot_encoder import SnapshotEncoder
from goaicore.records.types import ConversationSnapshot
from tests.records.records_samples import ALL_SAMPLES
from tests.records.records_strangers import swap_stranger
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


@FAST
@given(records, st.data())
def test_a_record_with_a_stranger_anywhere_encodes_as_the_generic_path_does(
    record: object, data: st.DataObject
) -> None:
    codec = _codec(record)
    odd = swap_stranger(record, data)
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
    odd = swap_stranger(record, data)
    assert _outcome(encoder.encode, odd) == _outcome(CODECS.snapshot.encode_generic, odd)
