"""What a store says when an operation cannot be done: the same errors from every store.

:class:`ConversationNotFound` and :class:`OperationRefused` are input errors (the
command line exits 2; HTTP answers 404 and 409), raised before anything is appended
unless they say otherwise. :class:`OperationPending`, :class:`WriteNotApplied` and
:class:`ReplyTimeout` say that the store workers did not answer in time (exit 1; HTTP
504).
"""

from __future__ import annotations

from goaicore.errors import GoaicoreError
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


def timed_out(request_id: str, timeout: float) -> ReplyTimeout:
    return ReplyTimeout(
        f"no reply to request {request_id} in {timeout:g} s "
        "(is a store worker running? ask again with the same request_id)",
        request_id,
    )
