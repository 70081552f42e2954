"""The direct readers agree with fastavro: same records, and fastavro has the say on bad bytes.

``Codec.decode`` reads a current-schema payload with a direct reader (the compiled
core's where it is installed, else the generated Python one) and hands anything it does
not take to ``decode_generic`` (fastavro). Each test compares the two for every record
type, with each direct reader: on any valid record, and on payloads with bytes flipped,
inserted, removed or cut, where both must give the same record or the same error.
"""

from __future__ import annotations

import dataclasses
import io
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import pytest
from fastavro import parse_schema, schemaless_reader, schemaless_writer
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from goaicore.records import ConversationSnapshot
from goaicore.records.avro import DecodeError, default_codecs, encode
from goaicore.records.avro.codec import Codec, Codecs
from goaicore.records.avro.direct_reader import _time
from goaicore.records.avro.generated import NotDirect
from goaicore.records.avro.native import native_module
from goaicore.records.avro.registry import SchemaRegistry
from tests.records.records_samples import ALL_SAMPLES
from tests.records.records_strategies import records

FAST = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
CODECS = {
    "compiled": default_codecs(),
    "python": Codecs.for_registry(SchemaRegistry.from_files(), native=False),
}
"""The codecs reading with each direct reader (the compiled one where it is installed)."""
READERS = pytest.mark.parametrize("reader", ["compiled", "python"])
SNAPSHOT = ConversationSnapshot(conversation_id="c", event_count=3)


def _codec(record: object, reader: str = "compiled") -> Codec[Any]:
    return CODECS[reader].by_type(record)


def test_each_direct_reader_is_the_one_it_is_named() -> None:
    compiled = CODECS["compiled"].event._direct
    assert (type(compiled).__module__ == "goaicore_native") is (native_module() is not None)
    assert type(CODECS["python"].event._direct).__module__ != "goaicore_native"


def _outcome(decode: Callable[[bytes], object], data: bytes) -> object:
    try:
        return decode(data)
    except DecodeError as err:
        return (err.reason, str(err))


@READERS
def test_every_record_type_has_a_direct_reader(reader: str) -> None:
    codecs = CODECS[reader]
    for codec in (
        codecs.event,
        codecs.chat_request,
        codecs.chat_reply,
        codecs.snapshot,
        codecs.reply_chunk,
    ):
        assert codec._direct is not None, codec.name


@READERS
@FAST
@given(records)
def test_any_record_reads_the_same_directly_and_through_fastavro(
    reader: str, record: object
) -> None:
    codec = _codec(record, reader)
    data = encode(record)  # type: ignore[arg-type]
    assert codec.decode(data) == codec.decode_generic(data) == record
    try:
        direct, end = codec._direct(data, 10)  # type: ignore[misc]
    except NotDirect:
        return  # a long of 64 bits: left to fastavro
    assert (direct, end) == (record, len(data))
    assert type(direct) is type(record)


@READERS
@pytest.mark.parametrize(("name", "record"), ALL_SAMPLES)
def test_the_direct_reader_takes_every_sample_record_itself(
    reader: str, name: str, record: object
) -> None:
    data = encode(record)  # type: ignore[arg-type]
    read, end = _codec(record, reader)._direct(data, 10)  # type: ignore[misc]
    assert (read, end) == (record, len(data))
    assert type(read) is type(record)


edits = st.lists(
    st.tuples(st.sampled_from(["flip", "insert", "remove"]), st.integers(0), st.integers(0, 255)),
    min_size=1,
    max_size=4,
)


@READERS
@FAST
@given(st.sampled_from([record for _, record in ALL_SAMPLES]) | records, edits, st.integers(0))
def test_a_damaged_payload_decodes_as_fastavro_decodes_it(
    reader: str, record: object, changes: list[tuple[str, int, int]], cut: int
) -> None:
    codec = _codec(record, reader)
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
    expected = schemaless_reader(written, timestamp, None)
    assert isinstance(expected, datetime)
    assert _time(millis) == expected
    # The compiled reader makes the same datetime, in the same zone (a snapshot's time).
    snapshot = dataclasses.replace(SNAPSHOT, started_at=expected)
    read, _ = _codec(snapshot)._direct(encode(snapshot), 10)
    assert read.started_at == expected
    assert read.started_at.tzinfo is expected.tzinfo is UTC


@READERS
@pytest.mark.parametrize("millis", [-62_135_596_800_001, 253_402_300_800_000, -(2**62)])
def test_a_time_out_of_the_datetime_range_is_left_to_fastavro(reader: str, millis: int) -> None:
    """Times before year 1 or after 9999 have no datetime: the direct readers leave them to
    fastavro, whose error (or result) stands."""
    codec = _codec(SNAPSHOT, reader)
    datum = codec.to_datum(SNAPSHOT)
    datum["started_at"] = millis  # fastavro writes a time given in milliseconds as is
    written = io.BytesIO()
    written.write(codec._header)
    schemaless_writer(written, codec.writer.parsed, datum)
    payload = written.getvalue()
    with pytest.raises((NotDirect, OverflowError)):  # the Python reader's datetime overflows
        codec._direct(payload, 10)  # type: ignore[misc]
    assert _outcome(codec.decode, payload) == _outcome(codec.decode_generic, payload)
