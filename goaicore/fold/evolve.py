"""``evolve(snapshot, **changes)``: ``dataclasses.replace`` at the fold's speed.

The fold makes a new snapshot for every event. ``dataclasses.replace`` walks the
fields, then runs ``__init__`` and ``__post_init__`` over all of them (about 14 µs
a call, most of the fold's time); ``evolve`` copies the slots in code generated
once from the field list, as ``dataclasses`` generates ``__init__`` (about 4 µs).
It skips ``__post_init__``: the fold passes fields already in their stored form
(tuples and dicts), which is all ``__post_init__`` would make of them.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Any, Protocol, TypedDict, Unpack

from goaicore.records import (
    ConversationSnapshot,
    FoldBounds,
    ForkOrigin,
    LogPosition,
    Sealed,
    SnapshotMessage,
)


class SnapshotChanges(TypedDict, total=False):
    """Fields of :class:`ConversationSnapshot` that ``evolve`` may change (all of them)."""

    conversation_id: str
    format_version: int
    messages: tuple[SnapshotMessage, ...]
    summary: str | None
    last_position: LogPosition | None
    recent_event_ids: tuple[str, ...]
    event_count: int
    duplicate_count: int
    events_by_type: Mapping[str, int]
    message_count: int
    prompt_tokens: int
    completion_tokens: int
    cost_usd_nanos: int
    anomalies: tuple[str, ...]
    deleted: bool
    started_at: datetime | None
    updated_at: datetime | None
    max_bytes: int
    dropped_messages: int
    dropped_before: LogPosition | None
    truncated_messages: int
    title: str | None
    owner: str | None
    tags: tuple[str, ...]
    attributes: Mapping[str, str]
    forked_from: ForkOrigin | None
    earlier_bounds: tuple[FoldBounds, ...]
    erased_before: LogPosition | None
    sealed: Sealed | None


def _evolver(cls: type[Any]) -> Callable[..., Any]:
    """A function copying an instance of the slotted dataclass ``cls`` with some fields changed."""
    names = [field.name for field in dataclasses.fields(cls)]
    namespace: dict[str, Any] = {"new": object.__new__, "cls": cls, "known": frozenset(names)}
    lines = [
        "def evolve(instance, /, **changes):",
        "    if not changes.keys() <= known:",
        "        raise TypeError(f'no such field: {sorted(changes.keys() - known)}')",
        "    copy = new(cls)",
    ]
    for index, name in enumerate(names):
        namespace[f"set_{index}"] = getattr(cls, name).__set__  # the slot, under the frozen guard
        value = f"changes[{name!r}] if {name!r} in changes else instance.{name}"
        lines.append(f"    set_{index}(copy, {value})")
    lines.append("    return copy")
    exec("\n".join(lines), namespace)
    evolve: Callable[..., Any] = namespace["evolve"]
    return evolve


class _Evolve(Protocol):
    def __call__(
        self, snapshot: ConversationSnapshot, /, **changes: Unpack[SnapshotChanges]
    ) -> ConversationSnapshot: ...


evolve: _Evolve = _evolver(ConversationSnapshot)
"""``snapshot`` with ``changes``: equal to ``dataclasses.replace(snapshot, **changes)``."""
