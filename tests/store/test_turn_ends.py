"""The reply header naming a turn's last event: it reads back as written, and a header
a foreign producer wrote, whatever it holds, names nothing instead of failing."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from goaicore.records import TopicPosition
from goaicore.store.turn_ends import (
    TURN_END_HEADER,
    TURN_ENDS_KEPT,
    TurnEnds,
    turn_end_header,
    turn_end_of,
)

OFFSETS = st.integers(min_value=0, max_value=2**63 - 1)


@given(partition=st.integers(min_value=0, max_value=2**31 - 1), offset=OFFSETS)
def test_a_turn_end_reads_back_as_written(partition: int, offset: int) -> None:
    position = TopicPosition(topic="events", partition=partition, offset=offset)
    headers = [("traceparent", b"00-x"), turn_end_header(position)]
    assert turn_end_of(headers, "events") == position


@given(
    headers=st.lists(
        st.tuples(
            st.sampled_from([TURN_END_HEADER, "goaicore-answers", "other"]),
            st.none() | st.binary(max_size=40),
        ),
        max_size=4,
    )
)
def test_any_header_names_a_position_or_nothing(headers: list[tuple[str, bytes | None]]) -> None:
    found = turn_end_of(headers, "events")
    if found is not None:
        assert found.topic == "events"
        assert found.partition >= 0
        assert found.offset >= 0
        named = [v for n, v in headers if n == TURN_END_HEADER and v is not None]
        partition, offset = named[0].split(b":")
        assert (int(partition), int(offset)) == (found.partition, found.offset)


def test_a_value_that_is_not_a_partition_and_an_offset_names_nothing() -> None:
    too_far = f"0:{2**63}".encode()
    for value in (
        b"",
        b"3",
        b"3:",
        b":5",
        b"-1:5",
        b"3:-5",
        b"3:5:7",
        b"\xff:1",
        "٣:5".encode(),
        too_far,
    ):
        assert turn_end_of([(TURN_END_HEADER, value)], "events") is None, value
    assert turn_end_of(None, "events") is None
    assert turn_end_of([(TURN_END_HEADER, None)], "events") is None


def test_each_turn_end_is_taken_once_and_the_oldest_go_first() -> None:
    ends = TurnEnds()
    for n in range(TURN_ENDS_KEPT + 5):
        ends.put("c", f"r{n}", TopicPosition("events", 0, n))
    assert len(ends) == TURN_ENDS_KEPT
    assert ends.take("c", "r0") is None  # among the oldest, forgotten
    last = f"r{TURN_ENDS_KEPT + 4}"
    assert ends.take("c", last) == TopicPosition("events", 0, TURN_ENDS_KEPT + 4)
    assert ends.take("c", last) is None
    assert ends.take("other", "r10") is None  # a request is its conversation's own
