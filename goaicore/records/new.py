"""Helpers that make new records: the only place ids and timestamps are invented.

Records themselves are plain data (the fold must stay free of clocks and randomness);
publishers call these helpers at the edge, once, and the values then travel unchanged.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from datetime import UTC, datetime

from goaicore.records.types import ChatRequest, ConversationEvent, EventBody


def new_id() -> str:
    """A fresh random id: a uuid4 as 32 lowercase hex digits."""
    return uuid.uuid4().hex


def utc_millis(moment: datetime) -> datetime:
    """``moment`` in UTC, truncated to the millisecond precision it has on the wire.

    Truncating before encoding means a record compares equal to its own decoded copy.
    Raises ValueError for a naive datetime, whose instant would be a guess.
    """
    if moment.tzinfo is None or moment.utcoffset() is None:
        raise ValueError(f"expected a timezone-aware datetime, got naive {moment!r}")
    moment = moment.astimezone(UTC)
    return moment.replace(microsecond=moment.microsecond // 1000 * 1000)


def utc_now() -> datetime:
    """The current time in UTC at millisecond precision."""
    return utc_millis(datetime.now(UTC))


def new_event(
    conversation_id: str,
    body: EventBody,
    *,
    source: str = "",
    causation_id: str | None = None,
    occurred_at: datetime | None = None,
    event_id: str | None = None,
) -> ConversationEvent:
    """A ``ConversationEvent`` with a fresh ``event_id`` and ``occurred_at`` of now (UTC).

    Pass ``event_id`` to re-publish an event idempotently, ``occurred_at`` to state when
    the fact happened when that was not now.
    """
    return ConversationEvent(
        event_id=event_id if event_id is not None else new_id(),
        conversation_id=conversation_id,
        occurred_at=utc_now() if occurred_at is None else utc_millis(occurred_at),
        source=source,
        causation_id=causation_id,
        body=body,
    )


def new_chat_request(
    conversation_id: str,
    text: str,
    *,
    system: str | None = None,
    tools: Iterable[str] = (),
    model: str | None = None,
    deadline: datetime | None = None,
    request_id: str | None = None,
    stream: bool = False,
    cancel: bool = False,
    regenerate: bool = False,
) -> ChatRequest:
    """A ``ChatRequest`` with a fresh ``request_id`` (pass one to retry idempotently)."""
    return ChatRequest(
        request_id=request_id if request_id is not None else new_id(),
        conversation_id=conversation_id,
        text=text,
        system=system,
        tools=tuple(tools),
        model=model,
        deadline=None if deadline is None else utc_millis(deadline),
        stream=stream,
        cancel=cancel,
        regenerate=regenerate,
    )
