"""Read the record batches of a partition straight from a local Apache Kafka's log files.

What a client never sees: how the broker grouped records into batches (a batch is
appended whole or not at all). The layout is Kafka's record batch, magic 2.
"""

from __future__ import annotations

import gzip
import struct
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import lz4.frame  # type: ignore[import-untyped]
import zstandard

from goaicore.kafka.apache import LocalKafka

_HEAD = struct.Struct(">qi")  # base offset, batch length (of what follows)
_RECORDS_COUNT_AT = 57  # bytes from the batch's start to its records count
_ATTRIBUTES_AT = 21  # the batch's attributes: its compression codec in the low 3 bits
_RECORDS_AT = 61  # where its records begin
_NONE, _GZIP, _LZ4, _ZSTD = 0, 1, 3, 4


@dataclass(frozen=True)
class StoredBatch:
    base_offset: int
    last_offset: int
    records: int
    size: int = 0
    """Bytes of the whole batch as stored (what the topic's max.message.bytes bounds)."""

    def holds(self, offset: int) -> bool:
        return self.base_offset <= offset <= self.last_offset


def stored_batches(kafka: LocalKafka, topic: str, partition: int) -> list[StoredBatch]:
    """Every record batch of ``topic``'s ``partition`` on the cluster's first node."""
    folder = kafka.nodes[0].folder / "data" / f"{topic}-{partition}"
    batches = []
    for segment in sorted(folder.glob("*.log")):
        batches += _batches(segment)
    return batches


def _batches(segment: Path) -> list[StoredBatch]:
    data = segment.read_bytes()
    out = []
    at = 0
    while at + _HEAD.size <= len(data):
        base, length = _HEAD.unpack_from(data, at)
        if length <= 0 or at + _HEAD.size + length > len(data):
            break  # the preallocated tail of an active segment
        (last_delta,) = struct.unpack_from(">i", data, at + 23)
        (count,) = struct.unpack_from(">i", data, at + _RECORDS_COUNT_AT)
        out.append(StoredBatch(base, base + last_delta, count, _HEAD.size + length))
        at += _HEAD.size + length
    return out


def partition_files(kafka: LocalKafka, prefix: str) -> list[Path]:
    """Every segment file (active, cleaned, swapped or awaiting deletion) of every
    partition whose topic starts with ``prefix``, on the cluster's first node."""
    data = kafka.nodes[0].folder / "data"
    return sorted(
        path
        for folder in data.glob(f"{prefix}*")
        for path in folder.iterdir()
        if ".log" in path.name
    )


def stored_records(segment: Path) -> Iterator[bytes]:
    """The records section of each batch of a segment file, decompressed: what holds the
    keys and values, as bytes to search (a file may be gone by the time it is read)."""
    try:
        data = segment.read_bytes()
    except FileNotFoundError:
        return
    at = 0
    while at + _HEAD.size <= len(data):
        _, length = _HEAD.unpack_from(data, at)
        end = at + _HEAD.size + length
        if length <= 0 or end > len(data):
            break
        (attributes,) = struct.unpack_from(">h", data, at + _ATTRIBUTES_AT)
        records = data[at + _RECORDS_AT : end]
        codec = attributes & 0x7
        if codec == _LZ4:
            records = lz4.frame.decompress(records)
        elif codec == _GZIP:
            records = gzip.decompress(records)
        elif codec == _ZSTD:  # the store worker's batches on the standard profile
            records = zstandard.ZstdDecompressor().decompressobj().decompress(records)
        elif codec != _NONE:
            raise AssertionError(f"{segment}: a batch compressed with codec {codec}")
        yield records
        at = end
