"""What of a record is content, to be sealed and erasable, and what is its audit skeleton.

Content is whatever a person wrote or a model or tool produced from it: message text,
the provider's raw JSON, tool arguments and results, game event text and attributes,
summaries, reasons and error text, metadata. The skeleton is everything else: ids,
types, times, roles, tool and model names, token counts, costs, positions. An erased
conversation keeps its skeleton readable forever; its content cannot be opened again.

One table of fields per record type (an event body's is its registry entry's
``content``), and two views of a record built from it: :func:`blanked`, its skeleton
with the content emptied (stored in the clear beside the sealed record), and
:func:`erased`, what a reader shows once the content cannot be opened: the skeleton
with a visible mark in place of each text.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any, TypeVar

from goaicore.records import (
    EVENT_TYPES,
    ChatReply,
    ChatRequest,
    ConversationEvent,
    ConversationKey,
    ConversationSnapshot,
    ReplyChunk,
    SnapshotMessage,
)
from goaicore.records.event_types import Kind

MARK = "[erased]"
"""What an erased text reads as."""


FIELDS: dict[type[Any], Mapping[str, Kind]] = {
    **{entry.body: entry.content for entry in EVENT_TYPES},
    ConversationEvent: {"body": Kind.BODY},
    ChatRequest: {"text": Kind.TEXT, "system": Kind.OPTIONAL_TEXT},
    ChatReply: {"text": Kind.OPTIONAL_TEXT, "error": Kind.OPTIONAL_TEXT},
    SnapshotMessage: {
        "text": Kind.TEXT,
        "tool_calls": Kind.CALLS,
        "name": Kind.OPTIONAL_TEXT,
        "content_json": Kind.EXTRA,
        "raw_json": Kind.EXTRA,
    },
    ConversationKey: {},  # ids and a wrapped key: nothing a person wrote
    ReplyChunk: {"text": Kind.TEXT, "arguments": Kind.OPTIONAL_TEXT},
    ConversationSnapshot: {
        "messages": Kind.MESSAGES,
        "summary": Kind.OPTIONAL_TEXT,
        "title": Kind.OPTIONAL_TEXT,
        "owner": Kind.OPTIONAL_TEXT,
        "tags": Kind.STRINGS,
        "attributes": Kind.MAP,
    },
}
"""The content fields of every record type that holds any: the event bodies' from their
registry (a test holds this table to every field of every record)."""

R = TypeVar("R")


def blanked(record: R) -> R:
    """``record`` with its content emptied: its skeleton, stored in the clear beside the seal."""
    return _replaced(record, "")


def erased(record: R) -> R:
    """``record`` as shown once its content cannot be opened: every text marked."""
    return _replaced(record, MARK)


def _replaced(record: R, mark: str) -> R:
    fields = FIELDS[type(record)]
    changes = {name: _blank(kind, getattr(record, name), mark) for name, kind in fields.items()}
    return dataclasses.replace(record, **changes) if changes else record  # type: ignore[type-var]


def _blank(kind: Kind, value: Any, mark: str) -> Any:
    if value is None or kind is Kind.EXTRA:
        return None
    if kind in (Kind.TEXT, Kind.OPTIONAL_TEXT):
        return mark
    if kind is Kind.STRINGS:
        return ()
    if kind is Kind.MAP:
        return {}
    if kind is Kind.CALLS:
        return tuple(dataclasses.replace(call, arguments=mark and "{}") for call in value)
    if kind is Kind.RANGES:
        return tuple(dataclasses.replace(r, note=None if r.note is None else mark) for r in value)
    if kind is Kind.BODY:
        return _replaced(value, mark)
    return tuple(_replaced(message, mark) for message in value)
