"""What a store says when an operation cannot be done: the same errors from every store.

:class:`ConversationNotFound` and :class:`OperationRefused` are input errors (the
command line exits 2; HTTP answers 404 and 409), raised before anything is appended
unless they say otherwise. :class:`OperationPending`, :class:`WriteNotApplied` and
:class:`ReplyTimeout` say that the store workers did not answer in time (exit 1; HTTP
504).
"""

from __future__ import annotations

from collections.abc import Sequence

from goaicore.errors import BrokerError, GoaicoreError
from goaicore.records import ConversationEvent
from goaicore.records.validation import InvalidInputError


class ConversationNotFound(InvalidInputError):
    """The conversation has no events the fold takes."""


class OperationRefused(InvalidInputError):
    """The conversation's state does not allow the operation (deleted, nothing to undo,
    a point inside a tool chain, a fork target that has events), or the fold refused it."""


class OperationPending(GoaicoreError):
    """The operation's event is on ``intake`` but no store worker sealed it into ``events``
    in time: it takes effect when one does (do not repeat it); the message says where."""


class WriteNotApplied(GoaicoreError):
    """A read ``after`` a write found the snapshot without it (not folded in time, or
    not a write of this conversation)."""


class ReplyTimeout(GoaicoreError, TimeoutError):
    """No reply to a chat request arrived in time.

    ``request_id`` is the request's id: asking again with it is answered from the
    stored reply, or by the turn still running, never by a second LLM turn.
    """

    def __init__(self, message: str, request_id: str | None = None) -> None:
        super().__init__(message)
        self.request_id = request_id


class NotAcknowledged(BrokerError):
    """The broker did not acknowledge a publish or a request in time (unreachable, or
    restarting): what was sent **may still be appended**, once the broker is back.

    Retry with the same ids, never with new ones: ``events`` are the envelopes (with
    their conversation ids) to publish again, which the fold applies once per event id;
    ``request_id`` is the chat request's, which a worker answers once.
    """

    def __init__(
        self,
        message: str,
        events: Sequence[tuple[str, ConversationEvent]] = (),
        request_id: str | None = None,
    ) -> None:
        super().__init__(message)
        self.events = tuple(events)
        self.request_id = request_id

    @property
    def event_ids(self) -> list[str]:
        """The ids of the events that may or may not be on the log."""
        return [event.event_id for _, event in self.events]


def not_acknowledged(
    timeout: float | None,
    events: Sequence[tuple[str, ConversationEvent]] = (),
    request_id: str | None = None,
) -> NotAcknowledged:
    """The NotAcknowledged for a wait of ``timeout`` seconds, saying how to retry safely."""
    if request_id is not None:
        what, again = f"request {request_id}", "send it again with the same request_id"
    elif events:
        what, again = f"{len(events)} event(s)", "publish NotAcknowledged.events again"
    else:
        what, again = "queued events", "publish them again with the same event ids"
    return NotAcknowledged(
        f"Kafka: no acknowledgement within {timeout} s; the {what} may still be appended "
        f"once the broker is back: {again} (each is applied once)",
        events,
        request_id,
    )


def timed_out(request_id: str, timeout: float, sent: bool = True) -> ReplyTimeout:
    """The ReplyTimeout of an ask; ``sent``: whether the broker acknowledged its request."""
    where = "is a store worker running?" if sent else "Kafka did not acknowledge the request;"
    return ReplyTimeout(
        f"no reply to request {request_id} in {timeout:g} s "
        f"({where} ask again with the same request_id)",
        request_id,
    )
