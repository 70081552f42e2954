"""The direct reader agrees with fastavro: same records, and fastavro has the say on bad bytes.

``Codec.decode`` reads a current-schema payload with the generated direct reader and
hands anything it does not take to ``decode_generic`` (fastavro). Each test compares the
two for every record type: on any valid record, and on payloads with bytes flipped,
inserted, removed or cut, where both must give the same record or the same error.
"""

from __future__ import annotations

import io
from collections.abc import Callable
from typing import Any

import pytest
from fastavro import parse_schema, schemaless_reader, schemaless_writer
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from goaicore.records.avro import DecodeError, default_codecs, encode
from goaicore.records.avro.codec import Codec
from goaicore.records.avro.direct_reader import _time
from goaicore.records.avro.generated import NotDirect
from tests.records.records_samples import ALL_SAMPLES
from tests.records.records_strategies import records

FAST = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
CODECS = default_codecs()


def _codec(record: object) -> Codec[Any]:
    return CODECS.by_type(record)


def _outcome(decode: Callable[[bytes], object], data: bytes) -> object:
    try:
        return decode(data)
    except DecodeError as err:
        return (err.reason, str(err))


def test_every_record_type_has_a_direct_reader() -> None:
    for codec in (
        CODECS.event,
        CODECS.chat_request,
        CODECS.chat_reply,
        CODECS.snapshot,
        CODECS.reply_chunk,
    ):
        assert codec._direct is not None, codec.name


@FAST
@given(records)
def test_any_record_reads_the_same_directly_and_through_fastavro(record: object) -> None:
    codec = _codec(record)
    data = encode(record)  # type: ignore[arg-type]
    assert codec.decode(data) == codec.decode_generic(data) == record
    try:
        direct, end = codec._direct(data, 10)  # type: ignore[misc]
    except NotDirect:
        return  # a long of 64 bits: left to fastavro
    assert (direct, end) == (record, len(data))
    assert type(direct) is type(record)


@pytest.mark.parametrize(("name", "record"), ALL_SAMPLES)
def test_the_direct_reader_takes_every_sample_record_itself(name: str, record: object) -> None:
    data = encode(record)  # type: ignore[arg-type]
    assert _codec(record)._direct(data, 10) == (record, len(data))  # type: ignore[misc]


edits = st.lists(
    st.tuples(st.sampled_from(["flip", "insert", "remove"]), st.integers(0), st.integers(0, 255)),
    min_size=1,
    max_size=4,
)


@FAST
@given(st.sampled_from([record for _, record in ALL_SAMPLES]) | records, edits, st.integers(0))
def test_a_damaged_payload_decodes_as_fastavro_decodes_it(
    record: object, changes: list[tuple[str, int, int]], cut: int
) -> None:
    codec = _codec(record)
    data = bytearray(encode(record))  # type: ignore[arg-type]
    for kind, where, value in changes:
        body = 10 + where % max(len(data) - 10, 1)  # the header stays: the direct path runs
        if kind == "flip" and body < len(data):
            data[body] = value
        elif kind == "insert":
            data.insert(body, value)
        elif body < len(data):
            del data[body]
    for payload in (bytes(data), bytes(data[: 10 + cut % max(len(data) - 9, 1)])):
        assert _outcome(codec.decode, payload) == _outcome(codec.decode_generic, payload)


@pytest.mark.parametrize(
    "millis", [0, 1, 999, 1000, -1, -1001, 1_763_915_071_280, 253_402_300_799_999]
)
def test_times_read_as_fastavro_reads_them(millis: int) -> None:
    written = io.BytesIO()
    schemaless_writer(written, parse_schema("long"), millis)
    written.seek(0)
    timestamp = parse_schema({"type": "long", "logicalType": "timestamp-millis"})
    assert _time(millis) == schemaless_reader(written, timestamp, None)
