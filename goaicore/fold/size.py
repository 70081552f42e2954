"""A snapshot's encoded size, computed without encoding it.

The fold checks the size bound on every event, so encoding the whole snapshot
each time would cost as much as the history is long. These functions follow the
snapshot schema's Avro binary layout field by field (strings are a length varint
plus UTF-8 bytes, longs are varints, unions an index) and charge every long its
widest varint, so the figure never falls below the real encoding; property
tests hold it to that and to a small slack. A message's size is remembered: the
same immutable message stays in a history across many folds.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from goaicore.records import ConversationSnapshot, Sealed, SnapshotMessage, ToolCall
from goaicore.records.avro.framing import HEADER_SIZE
from goaicore.records.truncate import utf8_size

_LONG = 10  # the widest zigzag varint of a 64-bit long
_ARRAY_END = 1
_CACHED = 16384  # entries of each identity cache below


def string_bytes(text: str) -> int:
    """Encoded size of an Avro string: its length varint and its UTF-8 bytes."""
    size = len(text) if text.isascii() else utf8_size(text)
    return (1 if size < 64 else _varint(size)) + size  # most strings: a one-byte length


def _optional(text: str | None) -> int:
    return 1 if text is None else 1 + string_bytes(text)


def _varint(value: int) -> int:
    zigzag = value << 1 if value >= 0 else (-value << 1) - 1
    return (zigzag.bit_length() + 6) // 7 or 1


def _array(count: int, items: int) -> int:
    return (_varint(count) + items + _ARRAY_END) if count else _ARRAY_END


def _strings(strings: tuple[str, ...]) -> int:
    """An array of strings, each length varint charged at the widest any of them needs."""
    if not strings:
        return _ARRAY_END
    total, longest = _string_totals(strings)
    widest = _varint(4 * longest)  # 4: UTF-8 bytes per character at most
    return _array(len(strings), total + widest * len(strings))


# The recent ids and the notes are windows the fold slides by one string per event:
# their UTF-8 total, the longest length and how many strings have it are remembered
# by identity, and ``note_window_slid`` carries them to the next window, so the
# bound's check does not add up 128 ids and 32 notes again on every event.
_windows: dict[int, tuple[tuple[str, ...], int, int, int]] = {}


def _string_totals(strings: tuple[str, ...]) -> tuple[int, int]:
    """UTF-8 bytes of all ``strings`` and the length of the longest, remembered by identity."""
    hit = _windows.get(id(strings))
    if hit is not None and hit[0] is strings:
        return hit[1], hit[2]
    total, longest = utf8_size("".join(strings)), max(map(len, strings))
    _remember_window(strings, total, longest, sum(1 for text in strings if len(text) == longest))
    return total, longest


def note_window_slid(after: tuple[str, ...], before: tuple[str, ...]) -> None:
    """Record that ``after`` is ``(*before, after[-1])`` less its oldest strings, when
    ``before``'s totals are known (``before`` is forgotten: the fold has moved on)."""
    hit = _windows.pop(id(before), None)
    if hit is None or hit[0] is not before or not after:
        return
    cut = len(before) + 1 - len(after)
    if cut < 0 or (len(after) > 1 and (after[0] is not before[cut] or after[-2] is not before[-1])):
        return
    _, total, longest, at_longest = hit
    for text in before[:cut]:
        total -= utf8_size(text)
        at_longest -= len(text) == longest
    added = after[-1]
    total += utf8_size(added)
    if len(added) > longest:
        longest, at_longest = len(added), 1
    elif len(added) == longest:
        at_longest += 1
    if at_longest == 0:  # every string of the longest length left: measure again
        longest = max(map(len, after))
        at_longest = sum(1 for text in after if len(text) == longest)
    _remember_window(after, total, longest, at_longest)


def _remember_window(strings: tuple[str, ...], total: int, longest: int, at_longest: int) -> None:
    if len(_windows) >= _CACHED:
        _windows.clear()
    _windows[id(strings)] = (strings, total, longest, at_longest)


def tool_call_bytes(call: ToolCall) -> int:
    """Encoded size of one tool call: its id, name and arguments."""
    return string_bytes(call.id) + string_bytes(call.name) + string_bytes(call.arguments)


_sizes: dict[int, tuple[SnapshotMessage, int]] = {}


def message_bytes(message: SnapshotMessage) -> int:
    """Encoded size of one history message, remembered by identity.

    A snapshot's messages are the same objects from one fold to the next, so an
    identity lookup (the message is kept beside its size, so its id is not reused)
    is much cheaper than hashing a message's fields again.
    """
    hit = _sizes.get(id(message))
    if hit is not None and hit[0] is message:
        return hit[1]
    size = _message_bytes(message)
    if len(_sizes) >= _CACHED:
        _sizes.clear()
    _sizes[id(message)] = (message, size)
    return size


def _message_bytes(message: SnapshotMessage) -> int:
    calls = message.tool_calls
    return (
        string_bytes(message.role)
        + string_bytes(message.text)
        # Most messages call no tool: no generator to make (it was a sixth of this).
        + (_array(len(calls), sum(map(tool_call_bytes, calls))) if calls else _ARRAY_END)
        + _optional(message.tool_call_id)
        + _optional(message.name)
        + _optional(message.content_json)
        + _optional(message.raw_json)
        + _optional(message.provider)
        + 1  # is_error
        + _optional(message.event_id)
    )


_totals: dict[int, tuple[tuple[SnapshotMessage, ...], int]] = {}


def messages_bytes(messages: Iterable[SnapshotMessage]) -> int:
    """Encoded size of the messages array's items (without its count and end markers).

    A history's total is remembered by identity too, and :func:`note_inserted` carries
    it to the next history, so checking the bound after each event does not add up the
    whole history again.
    """
    if type(messages) is not tuple:
        return sum(map(message_bytes, messages))
    hit = _totals.get(id(messages))
    if hit is not None and hit[0] is messages:
        return hit[1]
    total = sum(map(message_bytes, messages))
    _remember_total(messages, total)
    return total


def note_inserted(
    after: tuple[SnapshotMessage, ...], before: tuple[SnapshotMessage, ...], added: SnapshotMessage
) -> None:
    """Record that ``after`` is ``before`` with ``added`` inserted, when ``before``'s total
    is known (the previous history is forgotten: the fold has moved on from it)."""
    hit = _totals.pop(id(before), None)
    if hit is not None and hit[0] is before:
        _remember_total(after, hit[1] + message_bytes(added))


def note_dropped(
    after: tuple[SnapshotMessage, ...],
    before: tuple[SnapshotMessage, ...],
    dropped: tuple[SnapshotMessage, ...],
) -> None:
    """Record that ``after`` is ``before`` without ``dropped``, when ``before``'s total is
    known (``before`` is forgotten, as in :func:`note_inserted`)."""
    hit = _totals.pop(id(before), None)
    if hit is not None and hit[0] is before:
        _remember_total(after, hit[1] - sum(map(message_bytes, dropped)))


def _remember_total(messages: tuple[SnapshotMessage, ...], total: int) -> None:
    # The history is kept beside its total, so its id is not reused while remembered.
    if len(_totals) >= _CACHED:
        _totals.clear()
    _totals[id(messages)] = (messages, total)


FIXED_BYTES = (
    HEADER_SIZE
    + _LONG  # format_version
    + _LONG
    + _ARRAY_END  # the messages array's count and end
    + 1
    + 2 * _LONG  # last_position
    + 2 * _LONG  # event_count, duplicate_count
    + 4 * _LONG  # message_count, prompt_tokens, completion_tokens, cost_usd_nanos
    + 1  # deleted
    + 2 * (1 + _LONG)  # started_at, updated_at
    + 2 * _LONG  # max_bytes, dropped_messages
    + 1
    + 2 * _LONG  # dropped_before
    + _LONG  # truncated_messages
    + 1
    + 2 * _LONG  # erased_before
)
"""The fields of fixed width (each long charged its widest varint), computed once."""


def bookkeeping_bytes(snapshot: ConversationSnapshot) -> int:
    """Everything but the messages: the header, ids, counts, notes, positions, times."""
    bounds = len(snapshot.earlier_bounds)
    return (
        FIXED_BYTES
        + string_bytes(snapshot.conversation_id)
        + _optional(snapshot.summary)
        + _strings(snapshot.recent_event_ids)
        + _counts(snapshot.events_by_type)
        + _strings(snapshot.anomalies)
        + metadata_bytes(snapshot)
        + _array(bounds, bounds * 4 * _LONG)
        + _sealed(snapshot.sealed)
    )


_count_bytes: dict[str, int] = {}


def _counts(counts: Mapping[str, int]) -> int:
    """The events-by-type map: each body type's name and its count (a long)."""
    if not counts:
        return _ARRAY_END
    total = 0
    for name in counts:
        size = _count_bytes.get(name)
        if size is None:  # a handful of body type names: remembered, the cache stays small
            size = string_bytes(name) + _LONG
            if len(_count_bytes) < _CACHED:
                _count_bytes[name] = size
        total += size
    return _array(len(counts), total)


def _sealed(sealed: Sealed | None) -> int:
    """A snapshot is sealed on its way out (the fold's are in the clear: one byte)."""
    if sealed is None:
        return 1
    return 1 + string_bytes(sealed.key_id) + _varint(len(sealed.data)) + len(sealed.data)


def metadata_bytes(snapshot: ConversationSnapshot) -> int:
    """The title, owner, tags, attributes and fork origin (schema v3)."""
    title, owner, tags, attributes, origin = (
        snapshot.title,
        snapshot.owner,
        snapshot.tags,
        snapshot.attributes,
        snapshot.forked_from,
    )
    if title is None and owner is None and not tags and not attributes and origin is None:
        return 2 + 2 * _ARRAY_END + 1  # most: no title, owner, tags, attributes or origin
    return (
        _optional(title)
        + _optional(owner)
        + _strings(tags)
        + _array(
            len(attributes), sum(string_bytes(k) + string_bytes(v) for k, v in attributes.items())
        )
        + (1 if origin is None else 1 + string_bytes(origin.conversation_id) + _LONG + _LONG)
    )


def snapshot_bytes(snapshot: ConversationSnapshot) -> int:
    """An upper bound of ``len(encode_snapshot(snapshot))``, within a few bytes per long."""
    return bookkeeping_bytes(snapshot) + messages_bytes(snapshot.messages)
