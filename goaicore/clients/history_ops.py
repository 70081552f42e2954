"""History operations: undo, rewind, fork and metadata, each an event appended to the log.

Nothing is removed from the log. A rewind or a fork carries the history it restores,
folded here from the log under the bound the worker folds with, so the fold takes it
as it is and a replay of the log alone reproduces it (``goaicore.fold``). A point
between a tool call and its results is refused: the history there is not valid to send.

Offsets are those of the conversation's partition of ``events`` (``goaicore history``
shows them); ``until_offset`` is inclusive, as in ``goaicore replay --until-offset``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING

from goaicore.clients.publisher import EventPublisher, TopicPosition
from goaicore.config import Settings
from goaicore.fold.carried import history_problem
from goaicore.fold.metadata import metadata_problem
from goaicore.fold.policy import FoldPolicy, policy_for_record_limit
from goaicore.fold.records import Applied, fold_records
from goaicore.lifecycle import Closing
from goaicore.records import (
    ConversationForked,
    ConversationRewound,
    ConversationSnapshot,
    MetadataSet,
)
from goaicore.records.validation import InvalidInputError, check_conversation_id
from goaicore.replay.reader import HistoryReader

if TYPE_CHECKING:
    from goaicore.clients.chat_client import ChatClient
    from goaicore.records import ChatReply

SOURCE = "goaicore.history-ops"


class ConversationNotFound(InvalidInputError):
    """The conversation has no events the fold takes."""


class OperationRefused(InvalidInputError):
    """The conversation's state does not allow the operation (deleted, nothing to undo,
    a point inside a tool chain, a fork target that has events)."""


@dataclass(frozen=True)
class Rewound:
    """A rewind appended: where, to which offset, and how many messages the history kept."""

    position: TopicPosition
    until_offset: int
    messages: int


@dataclass(frozen=True)
class Undone(Rewound):
    """An undo: a rewind to just before the last user message, whose text it gives back."""

    text: str


@dataclass(frozen=True)
class Forked:
    """A fork appended to the new conversation: where, and from which source offset."""

    position: TopicPosition
    source_partition: int
    until_offset: int
    messages: int


class HistoryOperations(Closing):
    """Undo, rewind, fork and set metadata on conversations (see the module docstring).

    Every call reads what it needs from the log and appends one event, or raises
    :class:`InvalidInputError` (appending nothing) when the operation cannot apply.
    """

    def __init__(self, settings: Settings | None = None) -> None:
        self.settings = settings or Settings()
        self.policy: FoldPolicy = policy_for_record_limit(self.settings.max_record_bytes)
        self._reader = HistoryReader(self.settings)
        self._publisher = EventPublisher(self.settings, source=SOURCE)

    def rewind(self, conversation_id: str, until_offset: int, reason: str = "rewind") -> Rewound:
        """Make the history what it was after the event at ``until_offset`` (-1: empty)."""
        if until_offset < -1:
            raise InvalidInputError(f"until_offset must be -1 or more, got {until_offset}")
        return self._rewind(conversation_id, self._log(conversation_id), until_offset, reason)

    def undo(self, conversation_id: str) -> Undone:
        """Rewind to just before the last user message still in the history."""
        log = self._log(conversation_id)
        current = log[-1].snapshot
        user = next((m for m in reversed(current.messages) if m.role == "user"), None)
        if user is None:
            raise OperationRefused(f"nothing to undo: {conversation_id!r} has no user message")
        offsets = _offsets_by_event_id(log)
        if user.event_id not in offsets:
            raise OperationRefused(
                f"the last user message of {conversation_id!r} came with its fork: undo cannot "
                "go back past a fork (fork the source again at an earlier offset)"
            )
        rewound = self._rewind(conversation_id, log, offsets[user.event_id] - 1, "undo")
        return Undone(rewound.position, rewound.until_offset, rewound.messages, user.text)

    def regenerate(
        self, conversation_id: str, client: ChatClient, timeout: float = 60.0
    ) -> ChatReply:
        """Undo the last exchange, then ask its user message again."""
        undone = self.undo(conversation_id)
        return client.ask(conversation_id, undone.text, timeout=timeout)

    def fork(
        self,
        source_id: str,
        new_id: str,
        before_offset: int | None = None,
        as_of: datetime | None = None,
    ) -> Forked:
        """Start ``new_id`` with ``source_id``'s history from its events at offsets below
        ``before_offset``, or up to the first event that occurred after ``as_of`` (one
        of the two; neither: all of them). Later events of the source never reach it."""
        if before_offset is not None and as_of is not None:
            raise InvalidInputError("give before_offset or as_of, not both")
        check_conversation_id(new_id)
        if new_id == source_id:
            raise OperationRefused("a fork needs a new conversation id, not the source's")
        if before_offset is not None and before_offset < 0:
            raise InvalidInputError(f"before_offset must be 0 or more, got {before_offset}")
        log = self._log(source_id)
        if before_offset is not None:
            until = before_offset - 1
        elif as_of is not None:
            later = [a.record.position.offset for a in log if a.event.occurred_at > as_of]
            until = (min(later) if later else log[-1].record.position.offset + 1) - 1
        else:
            until = log[-1].record.position.offset
        if any(True for _ in self._reader.records(new_id)):
            raise OperationRefused(f"{new_id!r} already has events: fork into a new conversation")
        then = self._valid_history_at(source_id, log, until)
        body = ConversationForked(
            source_conversation_id=source_id,
            source_partition=log[0].record.position.partition,
            until_offset=until,
            messages=then.messages if then else (),
            summary=then.summary if then else None,
        )
        position = self._publisher.publish(new_id, body)
        return Forked(position, body.source_partition, until, len(body.messages))

    def set_metadata(
        self,
        conversation_id: str,
        title: str | None = None,
        owner: str | None = None,
        tags: Iterable[str] | None = None,
        attributes: Mapping[str, str | None] | None = None,
    ) -> TopicPosition:
        """Change the title, owner, tags (replacing them) or attributes (None removes one);
        what is left None stays as it is, and an empty title or owner removes it."""
        check_conversation_id(conversation_id)
        change = MetadataSet(
            title=title,
            owner=owner,
            tags=None if tags is None else tuple(tags),
            attributes=dict(attributes or {}),
        )
        problem = metadata_problem(None, change)
        if problem is not None:
            raise InvalidInputError(f"metadata not set: {problem}")
        return self._publisher.publish(conversation_id, change)

    def close(self) -> None:
        self._reader.close()
        self._publisher.close()

    def _log(self, conversation_id: str) -> list[Applied]:
        """What folding each of the conversation's records gave (those the fold takes)."""
        check_conversation_id(conversation_id)
        records = self._reader.records(conversation_id)
        log = [o for o in fold_records(records, self.policy) if isinstance(o, Applied)]
        if not log:
            raise ConversationNotFound(f"no events for conversation {conversation_id!r}")
        if log[-1].snapshot.deleted:
            raise OperationRefused(f"conversation {conversation_id!r} was deleted")
        return log

    def _rewind(
        self,
        conversation_id: str,
        log: Sequence[Applied],
        until_offset: int,
        reason: str,
    ) -> Rewound:
        then = self._valid_history_at(conversation_id, log, until_offset)
        body = ConversationRewound(
            until_offset=until_offset,
            messages=then.messages if then else (),
            summary=then.summary if then else None,
            reason=reason,
        )
        position = self._publisher.publish(conversation_id, body)
        return Rewound(position, until_offset, len(body.messages))

    def _valid_history_at(
        self,
        conversation_id: str,
        log: Sequence[Applied],
        until_offset: int,
    ) -> ConversationSnapshot | None:
        """The conversation as of ``until_offset``; refused where no history may stop."""
        then = _as_of(log, until_offset)
        if then is not None and history_problem(then.messages) is not None:
            valid = [
                a.record.position.offset
                for a in log
                if history_problem(a.snapshot.messages) is None
            ]
            before = max((o for o in valid if o < until_offset), default=-1)
            after = min((o for o in valid if o > until_offset), default=None)
            nearest = f"{before}" + (f" or {after}" if after is not None else "")
            raise OperationRefused(
                f"offset {until_offset} of {conversation_id!r} is between a tool call and its "
                f"results, where the history is not valid to send; the nearest offsets that "
                f"are: {nearest}"
            )
        return then


def _as_of(log: Sequence[Applied], until_offset: int) -> ConversationSnapshot | None:
    """The snapshot after the last event at or below ``until_offset`` (None: before the first)."""
    then = None
    for applied in log:
        if applied.record.position.offset > until_offset:
            break
        then = applied.snapshot
    return then


def _stops_validly(applied: Applied) -> bool:
    return history_problem(applied.snapshot.messages) is None


def _offsets_by_event_id(log: Sequence[Applied]) -> dict[str | None, int]:
    """Each event id's first offset (a republished copy later is a duplicate)."""
    offsets: dict[str | None, int] = {}
    for applied in log:
        offsets.setdefault(applied.event.event_id, applied.record.position.offset)
    return offsets
