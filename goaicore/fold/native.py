"""The compiled fold: :func:`goaicore.fold.fold`'s rules for the events that make most
of a log, run by ``goaicore_native`` where it is installed.

The compiled core (``native/``, Rust under PyO3) folds an event exactly as the Python
fold does when nothing out of the ordinary happens: a redelivery, an event published
again, and a user message, assistant turn, tool result, game event or failed turn that
applies and leaves the snapshot inside its bounds. Everything else it hands back (an
event refused, whose anomaly note the Python fold words; a snapshot the size bound
cuts; the history operations, metadata, compaction, deletion and erasure; fold version
1; a value of a type the records do not declare), and :func:`goaicore.fold.fold` runs
the Python fold from the same snapshot. The Python fold stays the one definition:
property tests hold the two to the same snapshots, and the same encoded bytes, for any
event sequence.

It reads the record types' slots directly, so it checks at start that each type has
exactly the fields it knows; a core built for other records is not used (pure Python,
with a warning). ``GOAICORE_NATIVE=off`` switches it off with the rest of the core.
"""

from __future__ import annotations

import functools
import logging
from typing import Any

from goaicore.fold import bound, size
from goaicore.fold.size import snapshot_bytes
from goaicore.records import (
    AssistantTurn,
    ConversationEvent,
    ConversationSnapshot,
    ForkOrigin,
    GameEvent,
    LogPosition,
    Sealed,
    SnapshotMessage,
    ToolCall,
    ToolResult,
    TurnFailed,
    Usage,
    UserMessage,
)
from goaicore.records.avro.api import default_snapshot_encoder
from goaicore.records.avro.native import native_module

log = logging.getLogger(__name__)

_TYPES = (
    ConversationSnapshot,
    SnapshotMessage,
    ConversationEvent,
    UserMessage,
    AssistantTurn,
    ToolResult,
    GameEvent,
    TurnFailed,
    Usage,
    ToolCall,
    LogPosition,
    ForkOrigin,
    Sealed,
)


@functools.cache
def native_folder() -> Any | None:
    """The compiled fold, sharing the default snapshot encoder's history cache (so the
    bytes of the messages it adds are the encoder's); None where the core is not
    installed, is switched off, or does not know these records."""
    histories = default_snapshot_encoder().histories
    if histories is None:
        return None
    try:
        return folder_over(histories)
    except (TypeError, KeyError) as err:
        log.warning("the compiled fold does not know these records, folding in Python: %s", err)
        return None


def folder_over(histories: Any) -> Any:
    """A compiled fold keeping its histories' facts in ``histories`` (a ``Histories`` of
    the compiled core); TypeError when the core does not know these records."""
    module = native_module()
    if module is None:
        raise TypeError("the compiled core is not installed, or is switched off")
    return module.Folder(
        {cls.__name__: cls for cls in _TYPES},
        histories,
        size.FIXED_BYTES,
        bound.NOTE_ROOM,
        bound.SUMMARY_SHARE,
    )


def snapshot_size(snapshot: ConversationSnapshot) -> int:
    """:func:`goaicore.fold.size.snapshot_bytes`, computed by the compiled core where it
    is installed (the bytes of the history the fold just wrote are known to it, so the
    figure costs no pass over the history): the store worker's measure of the snapshots
    it holds back. Property tests hold the two to the same figure."""
    folder = native_folder()
    if folder is not None:
        measured: int | None = folder.snapshot_bytes(snapshot)
        if measured is not None:
            return measured
    return snapshot_bytes(snapshot)
