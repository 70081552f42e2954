"""goaicore's own murmur2 places every key where the Java client (and kafka-python, and
librdkafka's murmur2_random) does."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st
from kafka.partitioner.default import murmur2 as reference

from goaicore.kafka.partitioner import murmur2, partition_for, partition_for_key


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=300), st.integers(1, 10_000))
def test_murmur2_partitions_as_the_java_client_does(key: bytes, partitions: int) -> None:
    assert murmur2(key) == reference(key)
    assert partition_for_key(key, partitions) == (reference(key) & 0x7FFFFFFF) % partitions


def test_known_keys_land_where_the_java_client_puts_them() -> None:
    # Values from org.apache.kafka.common.utils.Utils.murmur2, as Kafka's own tests state
    # them for these strings.
    assert murmur2(b"21") == (-973932308) & 0xFFFFFFFF
    assert murmur2(b"foobar") == (-790332482) & 0xFFFFFFFF
    assert murmur2(b"a-little-bit-long-string") == (-985981536) & 0xFFFFFFFF
    assert murmur2(b"a-little-bit-longer-string") == (-1486304829) & 0xFFFFFFFF
    assert murmur2(b"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8") == (-58897971) & 0xFFFFFFFF
    assert partition_for("player-7", 6) == partition_for_key(b"player-7", 6)
