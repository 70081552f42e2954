"""Which partition a record's key belongs to: the Java client's default rule (murmur2).

Apache Kafka's Java producer, librdkafka's ``murmur2_random`` and every producer of
goaicore's place a keyed record by ``murmur2(key) & 0x7fffffff % partitions``; that
rule is what keeps the topics co-partitioned by conversation. It is written here in
plain Python (no Kafka client needed), the same function as
``org.apache.kafka.common.utils.Utils.murmur2``.
"""

from __future__ import annotations

import functools

_SEED = 0x9747B28C
_M = 0x5BD1E995
_MASK = 0xFFFFFFFF


def murmur2(data: bytes) -> int:
    """MurmurHash2 of ``data`` as Kafka's Java client computes it (unsigned 32 bits)."""
    length = len(data)
    h = _SEED ^ length
    whole = length & ~3
    for i in range(0, whole, 4):
        k = int.from_bytes(data[i : i + 4], "little")
        k = (k * _M) & _MASK
        k ^= k >> 24
        k = (k * _M) & _MASK
        h = ((h * _M) & _MASK) ^ k
    extra = length & 3
    if extra >= 3:
        h ^= data[whole + 2] << 16
    if extra >= 2:
        h ^= data[whole + 1] << 8
    if extra >= 1:
        h ^= data[whole]
        h = (h * _M) & _MASK
    h ^= h >> 13
    h = (h * _M) & _MASK
    h ^= h >> 15
    return h


def partition_for(conversation_id: str, partitions: int) -> int:
    """The partition a conversation's records land in (the Java client's murmur2 rule).

    Every producer of ours (kafka-python, Faust/aiokafka) uses this default
    partitioner, which is what keeps the topics co-partitioned by conversation.
    """
    return partition_for_key(conversation_id.encode(), partitions)


def partition_for_key(key: bytes, partitions: int) -> int:
    """:func:`partition_for` of a record key as it is on the wire."""
    if len(key) <= _CACHED_KEY_BYTES:
        return _cached_partition(key, partitions)
    return _partition(key, partitions)


# murmur2 is pure Python (a few µs a key): a worker writing a snapshot for each of
# thousands of conversations per batch asks again for the same keys. Remembered for
# keys the length of most conversation ids: about 20 MB at most.
_CACHED_KEY_BYTES = 128
_CACHED_KEYS = 65536


@functools.lru_cache(maxsize=_CACHED_KEYS)
def _cached_partition(key: bytes, partitions: int) -> int:
    return _partition(key, partitions)


def _partition(key: bytes, partitions: int) -> int:
    return (murmur2(key) & 0x7FFFFFFF) % partitions
