"""The compaction record: validation, the pure replay, the wire form, plain-list diffs."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from goaicore import Message, decode_event, encode_event, new_event
from goaicore.conversation.compaction import (
    CompactionMismatchError,
    CompactionRecord,
    Replacement,
    apply_compaction,
    diff_record,
    from_compaction_applied,
    replay_compaction,
    to_compaction_applied,
)
from goaicore.records import CompactedRange, CompactionApplied, SnapshotMessage

HISTORY = [Message.user(f"m{i}") for i in range(8)]


def test_a_record_replaces_each_range_by_its_note_or_nothing() -> None:
    record = CompactionRecord(
        "test", (Replacement(0, 1, "first two"), Replacement(4, 5)), message_count=8
    )
    assert apply_compaction(HISTORY, record) == [
        Message.context("first two"),
        HISTORY[2],
        HISTORY[3],
        HISTORY[6],
        HISTORY[7],
    ]
    assert record.removed_count == 4
    assert (record.first_index, record.last_index) == (0, 5)
    assert record.summary is None  # several ranges: no single summary
    assert apply_compaction(HISTORY, record) == apply_compaction(HISTORY, record)


def test_apply_never_changes_its_input() -> None:
    history = list(HISTORY)
    apply_compaction(history, CompactionRecord("t", (Replacement(0, 6, "x"),)))
    assert history == HISTORY


@pytest.mark.parametrize(
    ("make", "match"),
    [
        (lambda: Replacement(3, 2), "invalid range"),
        (lambda: Replacement(-1, 2), "invalid range"),
        (lambda: Replacement(0, 2, "  "), "must not be empty"),
        (lambda: CompactionRecord("t", ()), "at least one range"),
        (lambda: CompactionRecord("t", (Replacement(2, 3), Replacement(3, 4))), "overlap"),
        (lambda: CompactionRecord("t", (Replacement(5, 6), Replacement(0, 1))), "sorted"),
        (lambda: CompactionRecord("t", (Replacement(0, 8),), message_count=8), "past"),
    ],
)
def test_malformed_records_are_refused(make: object, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        make()  # type: ignore[operator]


def test_a_record_from_another_history_is_a_mismatch() -> None:
    record = CompactionRecord("t", (Replacement(0, 2),), message_count=8)
    with pytest.raises(CompactionMismatchError, match="computed from 8 messages, applied to 7"):
        apply_compaction(HISTORY[:7], record)
    unknown_basis = CompactionRecord("t", (Replacement(0, 9),))
    with pytest.raises(CompactionMismatchError, match="ends at 9"):
        apply_compaction(HISTORY, unknown_basis)


def test_replay_works_on_snapshot_messages_too() -> None:
    snapshot = [SnapshotMessage(role="user", text=f"m{i}") for i in range(8)]
    record = CompactionRecord("t", (Replacement(1, 2, "note"), Replacement(5, 7)))
    replayed = replay_compaction(
        snapshot, record, lambda text: SnapshotMessage(role="system", text=text)
    )
    assert [(m.role, m.text) for m in replayed] == [
        ("user", "m0"),
        ("system", "note"),
        ("user", "m3"),
        ("user", "m4"),
    ]
    library = apply_compaction(HISTORY, record)
    assert [(m.role, m.text) for m in library] == [(m.role, m.text) for m in replayed]


def test_one_range_travels_in_the_v1_fields() -> None:
    record = CompactionRecord("summarize", (Replacement(0, 11, "They met."),), 20, 9000, 1200)
    body = to_compaction_applied(record, basis_event_id="b" * 32)
    assert body == CompactionApplied(
        strategy="summarize",
        first_index=0,
        last_index=11,
        removed_count=12,
        tokens_before=9000,
        tokens_after=1200,
        summary="They met.",
        basis_event_id="b" * 32,
        replacements=(),
        basis_message_count=20,
    )
    assert from_compaction_applied(body) == record


def test_several_ranges_travel_in_replacements() -> None:
    record = CompactionRecord("tool-exchange-summary", (Replacement(1, 2, "a"), Replacement(5, 6)))
    body = to_compaction_applied(record)
    assert (body.first_index, body.last_index, body.removed_count, body.summary) == (1, 6, 4, None)
    assert body.replacements == (
        CompactedRange(first_index=1, last_index=2, note="a"),
        CompactedRange(first_index=5, last_index=6, note=None),
    )
    assert from_compaction_applied(body) == record


def test_a_v1_event_reads_as_one_range_with_an_unknown_basis() -> None:
    v1 = CompactionApplied(strategy="drop-oldest", first_index=0, last_index=3, summary="")
    record = from_compaction_applied(v1)
    assert record == CompactionRecord("drop-oldest", (Replacement(0, 3, None),))
    assert apply_compaction(HISTORY, record) == HISTORY[4:]
    with pytest.raises(ValueError, match="invalid range"):
        from_compaction_applied(CompactionApplied(strategy="x", first_index=3, last_index=1))


replacements = st.lists(
    st.tuples(
        st.integers(0, 3), st.integers(0, 3), st.none() | st.text(min_size=1).filter(str.strip)
    ),
    min_size=1,
    max_size=4,
).map(
    lambda specs: tuple(
        Replacement(start, start + length, note) for start, length, note in _place(specs)
    )
)


def _place(specs: list[tuple[int, int, str | None]]) -> list[tuple[int, int, str | None]]:
    """Gaps and lengths -> sorted, disjoint ranges."""
    out, position = [], 0
    for gap, length, note in specs:
        out.append((position + gap, length, note))
        position += gap + length + 1
    return out


@settings(max_examples=150, deadline=None)
@given(
    replaced=replacements,
    strategy=st.text(max_size=20),
    known_basis=st.booleans(),
    tokens=st.tuples(st.integers(0, 2**40), st.integers(0, 2**40)),
)
def test_every_record_survives_the_log_exactly(
    replaced: tuple[Replacement, ...],
    strategy: str,
    known_basis: bool,
    tokens: tuple[int, int],
) -> None:
    length = replaced[-1].last_index + 3
    record = CompactionRecord(strategy, replaced, length if known_basis else None, *tokens)
    event = new_event("c", to_compaction_applied(record))
    body = decode_event(encode_event(event)).body
    assert isinstance(body, CompactionApplied)
    assert from_compaction_applied(body) == record
    history = [Message.user(str(i)) for i in range(length)]
    compacted = apply_compaction(history, record)
    assert len(compacted) == length - record.removed_count + sum(
        r.note is not None for r in replaced
    )


def test_a_plain_list_compaction_gets_a_record_when_it_is_one_range() -> None:
    dropped = diff_record(HISTORY, HISTORY[3:])
    assert dropped == CompactionRecord("custom", (Replacement(0, 2),), message_count=8)
    middle = [*HISTORY[:2], Message.context("gist"), *HISTORY[6:]]
    noted = diff_record(HISTORY, middle, strategy="mine")
    assert noted == CompactionRecord("mine", (Replacement(2, 5, "gist"),), message_count=8)
    assert noted is not None
    assert apply_compaction(HISTORY, noted) == middle
    assert diff_record(HISTORY, HISTORY) is None
    assert diff_record(HISTORY, [*HISTORY[:2], Message.user("new"), *HISTORY[6:]]) is None
    assert diff_record(HISTORY, [HISTORY[0], *HISTORY[2:6]]) is None  # two ranges
