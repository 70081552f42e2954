"""Compaction as a record: what was replaced, and the pure function that replays it.

A compaction never edits a history in place. A strategy decides which ranges of the
history to replace (by nothing, or by one context note such as a summary); the result is
a ``CompactionRecord``, and the compacted history is always ``apply_compaction(history,
record)``. The event-sourced side appends the record as a ``CompactionApplied`` event and
its fold calls the same function on replay, so the compacted history is reproduced
exactly, with no LLM call and no clock.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from itertools import pairwise
from typing import TypeVar

from goaicore.conversation.messages import Message
from goaicore.errors import InputError
from goaicore.records.types import Usage

M = TypeVar("M")


class CompactionMismatchError(InputError):
    """A record does not fit the history it is applied to (a different basis)."""


@dataclass(frozen=True, slots=True)
class Replacement:
    """Messages ``first_index..last_index`` (inclusive) are replaced by ``note``.

    ``note`` becomes one context message (``Message.context(note)``); ``None`` drops the
    range. Indices refer to the history the compaction was computed from.
    """

    first_index: int
    last_index: int
    note: str | None = None

    def __post_init__(self) -> None:
        if self.first_index < 0 or self.last_index < self.first_index:
            raise ValueError(f"invalid range {self.first_index}..{self.last_index}")
        if self.note is not None and not self.note.strip():
            raise ValueError("a replacement note must not be empty (use None to drop)")

    @property
    def count(self) -> int:
        """How many messages the range covers."""
        return self.last_index - self.first_index + 1


@dataclass(frozen=True, slots=True)
class CompactionRecord:
    """One compaction: the ranges replaced, in order, and the tokens it saved.

    ``message_count`` is the length of the history the compaction was computed from
    (``None`` when unknown, e.g. a record read from a v1 event); ``apply_compaction``
    refuses a history of another length. Token counts are those of the counter the
    compactor used, for the whole request (system prompt and tools included).
    """

    strategy: str
    replacements: tuple[Replacement, ...]
    message_count: int | None = None
    tokens_before: int = 0
    tokens_after: int = 0

    def __post_init__(self) -> None:
        if type(self.replacements) is not tuple:
            object.__setattr__(self, "replacements", tuple(self.replacements))
        if not self.replacements:
            raise ValueError("a compaction record replaces at least one range")
        for earlier, later in pairwise(self.replacements):
            if later.first_index <= earlier.last_index:
                raise ValueError("replacement ranges must be sorted and must not overlap")
        if self.message_count is not None and self.last_index >= self.message_count:
            raise ValueError(
                f"range ends at {self.last_index}, past a history of {self.message_count}"
            )

    @property
    def first_index(self) -> int:
        return self.replacements[0].first_index

    @property
    def last_index(self) -> int:
        return self.replacements[-1].last_index

    @property
    def removed_count(self) -> int:
        """Messages taken out of the history (notes put in are not subtracted)."""
        return sum(r.count for r in self.replacements)

    @property
    def summary(self) -> str | None:
        """The note of a single replacement (the summary, for summarisation), else None."""
        return self.replacements[0].note if len(self.replacements) == 1 else None


@dataclass(frozen=True, slots=True)
class CompactionOutcome:
    """What a compactor returns to ``Chat``: the new history, its record, any warnings.

    ``messages`` always equals ``apply_compaction(original, record)``; ``usage`` is what
    computing it cost in LLM tokens (a summary), when anything.
    """

    messages: list[Message]
    record: CompactionRecord
    warnings: tuple[str, ...] = ()
    usage: Usage | None = None


def apply_compaction(messages: Sequence[Message], record: CompactionRecord) -> list[Message]:
    """The compacted history: ``messages`` with each of the record's ranges replaced.

    Pure and deterministic. Each ``Replacement`` removes ``messages[first:last + 1]`` and,
    when it has a note, puts ``Message.context(note)`` in its place; messages outside the
    ranges are kept, in order, as they are. Raises ``CompactionMismatchError`` when the
    record was computed from a history of another length or its ranges fall outside.
    """
    return replay_compaction(messages, record, Message.context)


def replay_compaction(
    messages: Sequence[M], record: CompactionRecord, make_note: Callable[[str], M]
) -> list[M]:
    """``apply_compaction`` for any message type: ``make_note(text)`` builds a note.

    Lets a fold replay a record on the messages of a snapshot (``goaicore.records.
    Message``) with the same rules, so both histories compact identically.
    """
    if record.message_count is not None and record.message_count != len(messages):
        raise CompactionMismatchError(
            f"compaction computed from {record.message_count} messages, applied to {len(messages)}"
        )
    if record.last_index >= len(messages):
        raise CompactionMismatchError(
            f"compaction range ends at {record.last_index}, the history has {len(messages)}"
        )
    out: list[M] = []
    position = 0
    for r in record.replacements:
        out.extend(messages[position : r.first_index])
        if r.note is not None:
            out.append(make_note(r.note))
        position = r.last_index + 1
    out.extend(messages[position:])
    return out


def diff_record(
    before: Sequence[Message], after: Sequence[Message], *, strategy: str = "custom"
) -> CompactionRecord | None:
    """The record of a compaction given only its input and output, when it has one.

    Lets a compactor that returns a plain message list still be logged: the output must
    be the input with one contiguous range dropped or replaced by one context message.
    Returns ``None`` for anything else (or no change).
    """
    limit = min(len(before), len(after))
    prefix = 0
    while prefix < limit and before[prefix] == after[prefix]:
        prefix += 1
    suffix = 0
    while suffix < limit - prefix and before[-1 - suffix] == after[-1 - suffix]:
        suffix += 1
    removed_end = len(before) - suffix  # exclusive
    inserted = after[prefix : len(after) - suffix]
    if removed_end <= prefix:
        return None
    if not inserted:
        note = None
    elif len(inserted) == 1 and inserted[0].role == "system" and inserted[0].text.strip():
        note = inserted[0].text
        if Message.context(note) != inserted[0]:
            return None
    else:
        return None
    return CompactionRecord(
        strategy=strategy,
        replacements=(Replacement(prefix, removed_end - 1, note),),
        message_count=len(before),
    )
