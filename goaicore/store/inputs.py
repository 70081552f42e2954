"""Every input a caller gives a store, checked and encoded the same way by every store:
a bad one raises :class:`~goaicore.records.validation.InvalidInputError` and nothing
is written."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol

from goaicore.records import (
    EVENT_BODY_TYPES,
    ChatRequest,
    ConversationEvent,
    GameEvent,
    new_chat_request,
    new_event,
)
from goaicore.records.avro.api import encode_chat_request, encode_event
from goaicore.records.avro.errors import EncodeError
from goaicore.records.types import EventBody
from goaicore.records.validation import (
    InvalidInputError,
    check_attributes,
    check_conversation_id,
    check_request_id,
    check_size,
    check_text,
)
from goaicore.sealing.records import sealed_room


class Limits(Protocol):
    """What an input is checked against (``goaicore.Settings`` is one)."""

    @property
    def max_record_bytes(self) -> int:
        """The largest record written."""
        ...

    @property
    def intake(self) -> bool:
        """Events go to ``intake``, where a worker seals them: room is kept for the seal."""
        ...


@dataclass(frozen=True)
class RecordLimits:
    """:class:`Limits` given outright (a store that reads no environment)."""

    max_record_bytes: int
    intake: bool = False


def event_record(
    settings: Limits, source: str, conversation_id: str, event: ConversationEvent | EventBody
) -> tuple[bytes, bytes]:
    """An event record's key and value, checked and encoded; InvalidInputError if bad.

    ``event`` is a whole envelope, or a body to wrap in one from ``source``. Going to
    ``intake``, it must leave room for the seal the worker adds.
    """
    check_conversation_id(conversation_id)
    if isinstance(event, ConversationEvent):
        if event.conversation_id != conversation_id:
            raise InvalidInputError(
                f"event {event.event_id} belongs to conversation "
                f"{event.conversation_id!r}, not {conversation_id!r}"
            )
        envelope = event
    elif isinstance(event, EVENT_BODY_TYPES):
        envelope = new_event(conversation_id, event, source=source)
    else:
        raise InvalidInputError(
            f"expected a ConversationEvent or an event body, got {type(event).__name__}"
        )
    try:
        payload = encode_event(envelope)
    except EncodeError as err:
        raise InvalidInputError(f"event does not fit the schema: {err}") from err
    limit = settings.max_record_bytes - (sealed_room(envelope) if settings.intake else 0)
    return conversation_id.encode(), check_size("event", payload, limit)


def event_group(
    events: Iterable[ConversationEvent | EventBody],
) -> list[ConversationEvent | EventBody]:
    """The events of a group to append together, as a list (each still to check); a
    single event, or anything else that is not a collection of them, is refused."""
    refused = InvalidInputError(
        f"expected a list of events to append together, got {type(events).__name__}"
    )
    if isinstance(events, (ConversationEvent, str, bytes, Mapping, *EVENT_BODY_TYPES)):
        raise refused
    try:
        return list(events)
    except TypeError:
        raise refused from None


def game_event_body(text: str, kind: str, attributes: Mapping[str, str] | None) -> GameEvent:
    """A GameEvent from a caller's arguments, each checked."""
    return GameEvent(
        kind=check_text("kind", kind),
        text=check_text("text", text),
        attributes=check_attributes(attributes),
    )


def chat_request_record(
    settings: Limits,
    conversation_id: str,
    text: str,
    system: str | None,
    tools: Iterable[str],
    model: str | None,
    deadline: datetime | None,
    request_id: str | None,
    stream: bool = False,
    regenerate: bool = False,
) -> tuple[ChatRequest, bytes]:
    """A chat request and its encoded record, every argument checked; InvalidInputError if bad."""
    request = new_chat_request(
        check_conversation_id(conversation_id),
        check_text("text", text),
        system=None if system is None else check_text("system", system, allow_empty=True),
        tools=tuple(tools),
        model=model,
        deadline=deadline,
        request_id=None if request_id is None else check_request_id(request_id),
        stream=stream,
        regenerate=regenerate,
    )
    try:
        payload = encode_chat_request(request)
    except EncodeError as err:
        raise InvalidInputError(f"chat request does not fit the schema: {err}") from err
    return request, check_size("chat request", payload, settings.max_record_bytes)


def cancel_record(
    settings: Limits, conversation_id: str, request_id: str
) -> tuple[ChatRequest, bytes]:
    """The request that stops the running turn of ``request_id`` in the conversation (no
    turn of its own), and its encoded record."""
    request = new_chat_request(
        check_conversation_id(conversation_id),
        "",
        request_id=check_request_id(request_id),
        cancel=True,
    )
    return request, check_size("cancel", encode_chat_request(request), settings.max_record_bytes)
