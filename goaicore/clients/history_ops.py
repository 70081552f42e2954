"""History operations: undo, rewind, fork, metadata and deletion, each an event appended
to the log.

Nothing is removed from the log. A rewind or a fork carries the history it restores,
folded here from the log under the conversation's own bound (its stored snapshot's, as
replay and verify use), so the fold takes it as it is and a replay of the log alone
reproduces it (``goaicore.fold``). A point between a tool call and its results is
refused: the history there is not valid to send.

Every operation reads the log again after appending its event and says whether the
fold applied it: a rewind names the last event of the history it was computed from
(``basis_event_id``), so an event that landed in between makes it an anomaly, never a
silent loss, and the caller is told to try again (:class:`OperationRefused`).

Offsets are those of the conversation's partition of ``events`` (``goaicore history``
shows them); ``until_offset`` is inclusive, as in ``goaicore replay --until-offset``.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from goaicore.clients.publisher import EventPublisher, TopicPosition
from goaicore.clients.snapshots import SnapshotReader
from goaicore.config import Settings
from goaicore.errors import GoaicoreError
from goaicore.fold.carried import history_problem
from goaicore.fold.fold import refusal
from goaicore.fold.metadata import metadata_problem
from goaicore.fold.pending import unanswered_calls
from goaicore.fold.policy import PolicyTimeline, policy_for_record_limit, timeline_of
from goaicore.fold.records import Applied, fold_records
from goaicore.lifecycle import Closing
from goaicore.records import (
    ConversationDeleted,
    ConversationErased,
    ConversationEvent,
    ConversationForked,
    ConversationKey,
    ConversationRewound,
    ConversationSnapshot,
    MetadataSet,
    UserMessage,
    new_event,
    utc_now,
)
from goaicore.records.types import EventBody
from goaicore.records.validation import InvalidInputError, check_conversation_id
from goaicore.replay.reader import HistoryReader
from goaicore.sealing.keyring import TopicKeys, doomed_by, not_erased

if TYPE_CHECKING:
    from goaicore.clients.chat_client import ChatClient
    from goaicore.records import ChatReply

SOURCE = "goaicore.history-ops"


class ConversationNotFound(InvalidInputError):
    """The conversation has no events the fold takes."""


class OperationRefused(InvalidInputError):
    """The conversation's state does not allow the operation (deleted, nothing to undo,
    a point inside a tool chain, a fork target that has events), or the fold refused it."""


class OperationPending(GoaicoreError):
    """The operation's event is on ``intake`` but no store worker sealed it into ``events``
    in time: it takes effect when one does (do not repeat it); the message says where."""


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


@dataclass(frozen=True)
class Erased:
    """An erasure appended and folded: where, whether the conversation's data key is
    destroyed (False: its content was never sealed, so none was made), and the forks
    that keep a copy of its history (an erasure of their own erases it there)."""

    position: TopicPosition
    key_destroyed: bool
    forks: tuple[str, ...] = ()


@dataclass
class _Scan:
    """What one read of a conversation's events gives, without keeping every snapshot."""

    latest: ConversationSnapshot
    partition: int
    last_offset: int
    kept: ConversationSnapshot | None = None
    """The snapshot just before the first event ``stop`` held for (None: before the first
    event); the latest when it held for none."""
    kept_until: int = -1
    """The offset ``kept`` is as of."""
    valid_offsets: list[int] = field(default_factory=list)
    """Offsets after which no tool call waits for its result."""
    events_by_id: dict[str, tuple[int, ConversationEvent]] = field(default_factory=dict)
    """Each event id's first offset and event (a later copy is a duplicate)."""
    unopened: list[int] = field(default_factory=list)
    """Offsets of sealed events this process could not open."""


class HistoryOperations(Closing):
    """Undo, rewind, fork and set metadata on conversations (see the module docstring).

    Every call reads what it needs from the log and appends one event, or raises
    :class:`InvalidInputError` and appends nothing when the operation cannot apply; when
    the fold refused the appended event (the conversation changed meanwhile), it raises
    :class:`OperationRefused` saying so, and the event changed nothing.
    """

    def __init__(self, settings: Settings | None = None) -> None:
        self.settings = settings or Settings()
        self._reader = HistoryReader(self.settings)
        self._snapshots = SnapshotReader(self.settings)
        self._publisher = EventPublisher(self.settings, source=SOURCE)
        self._intake: EventPublisher | None = None  # for sealed conversations, intake off
        self._topic_keys: TopicKeys | None = None

    def rewind(self, conversation_id: str, until_offset: int, reason: str = "rewind") -> Rewound:
        """Make the history what it was after the event at ``until_offset`` (-1: empty)."""
        if until_offset < -1:
            raise InvalidInputError(f"until_offset must be -1 or more, got {until_offset}")
        policy = self._policy(conversation_id)
        scan = self._scan(
            conversation_id,
            policy,
            lambda a: a.record.position.offset > until_offset,
            copies_content=True,
        )
        return self._rewind(conversation_id, scan, until_offset, reason, policy)

    def undo(self, conversation_id: str, ask_again: bool = False) -> Undone:
        """Rewind to just before the last user message still in the history (the events
        after it, game events included, leave the history with it). ``ask_again``:
        refuse, before anything is appended, a message a chat request cannot carry again
        (multimodal content)."""
        return self._undo(conversation_id, ask_again)

    def regenerate(
        self, conversation_id: str, client: ChatClient, timeout: float = 60.0
    ) -> ChatReply:
        """Undo the last exchange, then ask its user message again (as the log holds it)."""
        undone = self._undo(conversation_id, ask_again=True)
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
        if before_offset is not None and before_offset < 0:
            raise InvalidInputError(f"before_offset must be 0 or more, got {before_offset}")
        check_conversation_id(new_id)
        if new_id == source_id:
            raise OperationRefused("a fork needs a new conversation id, not the source's")
        stop: Callable[[Applied], bool] | None = None
        if before_offset is not None:
            stop = lambda a: _offset(a) >= before_offset  # noqa: E731
        elif as_of is not None:
            stop = lambda a: a.event.occurred_at > as_of  # noqa: E731
        scan = self._scan(source_id, self._policy(source_id), stop, copies_content=True)
        until = before_offset - 1 if before_offset is not None else scan.kept_until
        if any(True for _ in self._reader.records(new_id)):
            raise OperationRefused(f"{new_id!r} already has events: fork into a new conversation")
        then = self._valid_at(source_id, scan, until, shift=1, option="before_offset")
        body = ConversationForked(
            source_conversation_id=source_id,
            source_partition=scan.partition,
            until_offset=until,
            messages=then.messages if then else (),
            summary=then.summary if then else None,
        )
        position = self._append(new_id, body, self._policy(new_id), related=(source_id,))
        return Forked(position, scan.partition, until, len(body.messages))

    def set_metadata(
        self,
        conversation_id: str,
        title: str | None = None,
        owner: str | None = None,
        tags: Iterable[str] | None = None,
        attributes: Mapping[str, str | None] | None = None,
    ) -> TopicPosition:
        """Change the title, owner, tags (replacing them) or attributes (None removes one);
        what is left None stays as it is, and an empty title or owner removes it. A
        conversation without events yet starts with its metadata."""
        check_conversation_id(conversation_id)
        change = MetadataSet(
            title=title,
            owner=owner,
            tags=None if tags is None else tuple(tags),
            attributes=dict(attributes or {}),
        )
        policy = self._policy(conversation_id)
        problem = metadata_problem(None, change, policy.latest.max_bytes)
        if problem is not None:
            raise InvalidInputError(f"metadata not set: {problem}")
        return self._append(conversation_id, change, policy)

    def delete(self, conversation_id: str, reason: str = "") -> TopicPosition:
        """Delete the conversation: its history and metadata leave the snapshot (the log
        keeps its events), and the fold takes nothing after it. Refused for a conversation
        without events or already deleted."""
        policy = self._policy(conversation_id)
        self._scan(conversation_id, policy)  # not found, or deleted: refused here
        return self._append(conversation_id, ConversationDeleted(reason=reason), policy)

    def erase(
        self,
        conversation_id: str,
        reason: str = "",
        timeout: float = 30.0,
        name_forks: bool = True,
    ) -> Erased:
        """Erase the conversation's content, keeping its audit skeleton.

        Appends :class:`ConversationErased`: the fold clears the history, summary, notes
        and metadata, and the worker that owns the conversation destroys its data key
        (a tombstone on the keys topic), so every sealed copy of its content can no
        longer be opened; ids, types, times, token counts and costs stay. Returns once
        the key's tombstone is on the broker (waiting at most ``timeout`` seconds for
        the worker). Refused for a conversation without events; erasing again, or a
        deleted conversation, is allowed. ``name_forks`` reads every snapshot to name
        the forks (and their forks) that keep a copy of the history.
        """
        policy = self._policy(conversation_id)
        self._scan(conversation_id, policy, allow_deleted=True)
        forks = self.forks_of(conversation_id) if name_forks else ()
        had_key = self._key_of(conversation_id) is not None
        erasure = ConversationErased(reason=reason)
        position = self._append(conversation_id, erasure, policy, wait=timeout)
        if not had_key:
            return Erased(position, key_destroyed=False, forks=forks)
        deadline = time.monotonic() + timeout
        while doomed_by(self._key_of(conversation_id), position.offset):
            if time.monotonic() > deadline:
                raise OperationRefused(
                    f"erasure appended at {position} and folded, but the data key of "
                    f"{conversation_id!r} was not destroyed within {timeout:.0f} s: is a "
                    "store worker running? It destroys the key when it folds the erasure"
                )
            time.sleep(0.1)
        return Erased(position, key_destroyed=True, forks=forks)

    def forks_of(self, conversation_id: str, progress: bool | None = False) -> tuple[str, ...]:
        """The conversations forked from this one, and from those, in order: each holds
        a copy of history it took from here."""
        children: dict[str, list[str]] = {}
        for fork_id, snapshot in sorted(self._snapshots.all(progress).items()):
            if snapshot.forked_from is not None:
                children.setdefault(snapshot.forked_from.conversation_id, []).append(fork_id)
        found: list[str] = []
        waiting = list(children.get(conversation_id, ()))
        while waiting:
            fork_id = waiting.pop(0)
            if fork_id not in found and fork_id != conversation_id:
                found.append(fork_id)
                waiting.extend(children.get(fork_id, ()))
        return tuple(found)

    def idle(
        self, days: float, now: datetime | None = None, progress: bool | None = None
    ) -> list[str]:
        """Conversations with content whose last event is more than ``days`` old: what a
        retention policy erases. One erased with nothing since is not listed again."""
        if days <= 0:
            raise InvalidInputError(f"days must be more than 0, got {days}")
        before = (now or utc_now()) - timedelta(days=days)
        return sorted(
            conversation_id
            for conversation_id, snapshot in self._snapshots.all(progress).items()
            if snapshot.updated_at is not None
            and snapshot.updated_at < before
            and not _erased_since_last_event(snapshot)
        )

    def close(self) -> None:
        self._reader.close()
        self._snapshots.close()
        self._publisher.close()
        if self._intake is not None:
            self._intake.close()
        if self._topic_keys is not None:
            self._topic_keys.close()

    def _policy(self, conversation_id: str) -> PolicyTimeline:
        """The bounds the worker folded this conversation under (its stored snapshot's)."""
        stored = self._snapshots.get(conversation_id)
        if stored is not None:
            return timeline_of(stored)
        return PolicyTimeline(policy_for_record_limit(self.settings.max_record_bytes))

    def _undo(self, conversation_id: str, ask_again: bool) -> Undone:
        policy = self._policy(conversation_id)
        scan = self._scan(conversation_id, policy, copies_content=True)
        message = next((m for m in reversed(scan.latest.messages) if m.role == "user"), None)
        if message is None:
            raise OperationRefused(f"nothing to undo: {conversation_id!r} has no user message")
        found = scan.events_by_id.get(message.event_id or "")
        if found is None or not isinstance(found[1].body, UserMessage):
            raise OperationRefused(
                f"the last user message of {conversation_id!r} came with its fork: undo cannot "
                "go back past a fork (fork the source again at an earlier offset)"
            )
        offset, user = found[0], found[1].body
        if ask_again and (user.content_json is not None or not user.text.strip()):
            raise OperationRefused(
                "the last user message has multimodal content or no text, which a chat "
                "request cannot carry: undo it, then ask again"
            )
        then = self._scan(conversation_id, policy, lambda a: _offset(a) >= offset)
        rewound = self._rewind(conversation_id, then, offset - 1, "undo", policy)
        return Undone(rewound.position, rewound.until_offset, rewound.messages, user.text)

    def _scan(
        self,
        conversation_id: str,
        policy: PolicyTimeline,
        stop: Callable[[Applied], bool] | None = None,
        allow_deleted: bool = False,
        copies_content: bool = False,
    ) -> _Scan:
        """Fold the conversation's events, keeping the snapshot just before the first
        event ``stop`` holds for; a deleted conversation is refused unless allowed, and
        when the operation ``copies_content``, so is content this process cannot open."""
        check_conversation_id(conversation_id)
        scan: _Scan | None = None
        stopped = False
        records = self._reader.records(conversation_id)
        for outcome in fold_records(records, policy, keys=self._reader.keys):
            if not isinstance(outcome, Applied):
                continue
            offset = outcome.record.position.offset
            if scan is None:
                scan = _Scan(outcome.snapshot, outcome.record.position.partition, offset)
            stopped = stopped or (stop is not None and stop(outcome))
            if not stopped:
                scan.kept, scan.kept_until = outcome.snapshot, offset
            scan.latest, scan.last_offset = outcome.snapshot, offset
            scan.events_by_id.setdefault(outcome.event.event_id, (offset, outcome.event))
            if outcome.event.sealed is not None:  # not opened: no key here
                scan.unopened.append(offset)
            if not unanswered_calls(outcome.snapshot.messages):
                scan.valid_offsets.append(offset)
        if scan is None:
            raise ConversationNotFound(f"no events for conversation {conversation_id!r}")
        if scan.latest.deleted and not allow_deleted:
            raise OperationRefused(f"conversation {conversation_id!r} was deleted")
        if copies_content:
            _refuse_unopened(conversation_id, scan)
        return scan

    def _rewind(
        self,
        conversation_id: str,
        scan: _Scan,
        until_offset: int,
        reason: str,
        policy: PolicyTimeline,
    ) -> Rewound:
        then = self._valid_at(conversation_id, scan, until_offset)
        ids = scan.latest.recent_event_ids
        body = ConversationRewound(
            until_offset=until_offset,
            messages=then.messages if then else (),
            summary=then.summary if then else None,
            reason=reason,
            basis_event_id=ids[-1] if ids else None,
        )
        position = self._append(conversation_id, body, policy)
        return Rewound(position, until_offset, len(body.messages))

    def _valid_at(
        self,
        conversation_id: str,
        scan: _Scan,
        until_offset: int,
        shift: int = 0,
        option: str = "until_offset",
    ) -> ConversationSnapshot | None:
        """The conversation as of ``until_offset`` (``scan.kept``); refused where no history
        may stop. The error names the nearest points that work, as the caller's ``option``
        counts them (``shift``: 1 for an exclusive offset)."""
        then = scan.kept
        if then is None or history_problem(then.messages) is None:
            return then
        before = max((o for o in scan.valid_offsets if o < until_offset), default=-1)
        after = min((o for o in scan.valid_offsets if o > until_offset), default=None)
        nearest = f"{before + shift}" + (f" or {after + shift}" if after is not None else "")
        raise OperationRefused(
            f"offset {until_offset} of {conversation_id!r} is between a tool call and its "
            f"results, where the history is not valid to send; the nearest {option} that "
            f"work: {nearest}"
        )

    def _append(
        self,
        conversation_id: str,
        body: EventBody,
        policy: PolicyTimeline,
        related: tuple[str, ...] = (),
        wait: float | None = None,
    ) -> TopicPosition:
        """Append ``body``, then fold the log up to it: refused if the fold did not apply it.

        Through ``intake`` (GOAICORE_INTAKE, or a conversation here or in ``related``
        with a data key: its workers seal), the event's place in ``events`` is where the
        worker sealed it: the log is read again until it is there, for ``wait`` seconds
        (``read_wait``, at least a second, unless given).
        """
        event = new_event(conversation_id, body, source=SOURCE)
        position = self._publisher_for((conversation_id, *related)).publish(conversation_id, event)
        direct = position.topic == self._reader.topic
        patience = wait if wait is not None else max(self.settings.read_wait, 1.0)
        deadline = time.monotonic() + patience
        while True:
            until = position.offset if direct else None
            found = self._fold_to(conversation_id, event, policy, until)
            if found is not None:
                return found
            if direct:
                return position
            if time.monotonic() > deadline:
                raise OperationPending(
                    f"appended to {position}, but no store worker sealed it into "
                    f"{self._reader.topic} within {patience:.0f} s: is one running? It takes "
                    "effect once one does; do not repeat it"
                )
            time.sleep(0.1)

    def _publisher_for(self, conversations: Iterable[str]) -> EventPublisher:
        """The intake's publisher where the workers seal (GOAICORE_INTAKE, or one of
        ``conversations`` has a data key): never the clear log for sealed content."""
        if self.settings.intake:
            return self._publisher
        if all(self._key_of(c) is None for c in conversations):
            return self._publisher
        if self._intake is None:
            intake = self.settings.with_overrides(intake_override=True)
            self._intake = EventPublisher(intake, source=SOURCE)
        return self._intake

    def _key_of(self, conversation_id: str) -> ConversationKey | None:
        """The conversation's data key as the keys topic holds it now (read on to its end:
        a key may have been made or destroyed since the last look)."""
        if self._topic_keys is None:
            self._topic_keys = TopicKeys(self.settings)
        self._topic_keys.refresh(conversation_id)
        return self._topic_keys.stored.get(conversation_id)

    def _fold_to(
        self,
        conversation_id: str,
        event: ConversationEvent,
        policy: PolicyTimeline,
        until_offset: int | None,
    ) -> TopicPosition | None:
        """Where ``event`` is in the log, once the fold applied it; None: not there yet."""
        records = self._reader.records(conversation_id, until_offset=until_offset)
        before: ConversationSnapshot | None = None
        for outcome in fold_records(records, policy, keys=self._reader.keys):
            if not isinstance(outcome, Applied):
                continue
            if outcome.event.event_id == event.event_id:
                where = outcome.record.position
                position = TopicPosition(self._reader.topic, where.partition, where.offset)
                problem = refusal(before, event, policy.at(where))
                if problem is not None:
                    raise OperationRefused(
                        f"appended at {position}, but the fold did not apply it: {problem}; "
                        "nothing changed (try again)"
                    )
                return position
            before = outcome.snapshot
        return None


def _offset(applied: Applied) -> int:
    return applied.record.position.offset


def _refuse_unopened(conversation_id: str, scan: _Scan) -> None:
    """An operation that copies history must not copy ``[erased]`` marks in place of
    content this process merely cannot open; content an erasure cleared is no loss."""
    unread = not_erased(scan.unopened, scan.latest)
    if unread:
        raise OperationRefused(
            f"{len(unread)} sealed events of {conversation_id!r} (from offset {unread[0]}) "
            "cannot be opened here: set GOAICORE_MASTER_KEYS to the master keys they were "
            "sealed under, or the operation would copy erasure marks instead of content"
        )


def _erased_since_last_event(snapshot: ConversationSnapshot) -> bool:
    erased, last = snapshot.erased_before, snapshot.last_position
    return erased is not None and last is not None and erased.offset >= last.offset
