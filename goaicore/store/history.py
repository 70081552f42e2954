"""The history operations' rules: what undo, rewind, replacing the last message, fork,
metadata, delete and erase append, decided from a fold of the conversation's log. No
I/O here: each store reads the log its own way and appends its own way, and all of
them decide the same.

Nothing is removed from the log. A rewind or a fork carries the history it restores,
folded from the log under the conversation's own bound (its stored snapshot's, as
replay and verify use), so the fold takes it as it is and a replay of the log alone
reproduces it (``goaicore.fold``). A point between a tool call and its results is
refused: the history there is not valid to send.

After appending, a store folds the log again up to the event (:func:`applied_at`): a
rewind names the last event of the history it was computed from
(``basis_event_id``), so an event that landed in between makes it an anomaly, never a
silent loss, and the caller is told to try again (:class:`OperationRefused`).

Offsets are those of the conversation's partition of ``events``; ``until_offset`` is
inclusive, as in ``goaicore replay --until-offset``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta

from goaicore.fold.carried import history_problem
from goaicore.fold.fold import refusal
from goaicore.fold.metadata import metadata_problem
from goaicore.fold.pending import unanswered_calls
from goaicore.fold.policy import PolicyTimeline, policy_for_record_limit, timeline_of
from goaicore.fold.records import Applied, LogRecord, Rejected, fold_records
from goaicore.records import (
    ConversationEvent,
    ConversationForked,
    ConversationRewound,
    ConversationSnapshot,
    MetadataSet,
    SnapshotMessage,
    TopicPosition,
    UserMessage,
)
from goaicore.records.validation import InvalidInputError, check_conversation_id
from goaicore.sealing.keyring import not_erased
from goaicore.sealing.records import KeyLookup
from goaicore.store.errors import ConversationNotFound, OperationRefused
from goaicore.store.inputs import RecordLimits, event_record

SOURCE = "goaicore.history-ops"
"""The ``source`` of every event a history operation appends."""


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
    already_erased: bool = False
    """The conversation was erased already, with no event since: this erasure is in the
    log, but there was nothing left to erase (and no key left to destroy)."""


Stop = Callable[[Applied], bool]
"""Says, of each event folded, whether the history wanted ends before it."""


@dataclass
class Scan:
    """What one fold of a conversation's events gives, without keeping every snapshot."""

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


def policy_for(stored: ConversationSnapshot | None, record_limit: int) -> PolicyTimeline:
    """The bounds the conversation was folded under: its stored snapshot's, else the
    current fold's under ``record_limit``."""
    if stored is not None:
        return timeline_of(stored)
    return PolicyTimeline(policy_for_record_limit(record_limit))


def scan(
    conversation_id: str,
    outcomes: Iterable[Applied | Rejected],
    stop: Stop | None = None,
    allow_deleted: bool = False,
    copies_content: bool = False,
) -> Scan:
    """The fold of the conversation's events, keeping the snapshot just before the first
    event ``stop`` holds for; a deleted conversation is refused unless allowed, and when
    the operation ``copies_content``, so is content this process cannot open."""
    found: Scan | None = None
    stopped = False
    for outcome in outcomes:
        if not isinstance(outcome, Applied):
            continue
        offset = outcome.record.position.offset
        if found is None:
            found = Scan(outcome.snapshot, outcome.record.position.partition, offset)
        stopped = stopped or (stop is not None and stop(outcome))
        if not stopped:
            found.kept, found.kept_until = outcome.snapshot, offset
        found.latest, found.last_offset = outcome.snapshot, offset
        found.events_by_id.setdefault(outcome.event.event_id, (offset, outcome.event))
        if outcome.event.sealed is not None:  # not opened: no key here
            found.unopened.append(offset)
        if not unanswered_calls(outcome.snapshot.messages):
            found.valid_offsets.append(offset)
    if found is None:
        raise ConversationNotFound(f"no events for conversation {conversation_id!r}")
    if found.latest.deleted and not allow_deleted:
        raise OperationRefused(f"conversation {conversation_id!r} was deleted")
    if copies_content:
        _refuse_unopened(conversation_id, found)
    return found


def check_until_offset(until_offset: int) -> None:
    if until_offset < -1:
        raise InvalidInputError(f"until_offset must be -1 or more, got {until_offset}")


def after_offset(until_offset: int) -> Stop:
    """Stops at the first event after ``until_offset``."""
    return lambda applied: applied.record.position.offset > until_offset


def from_offset(offset: int) -> Stop:
    """Stops at the event at ``offset`` (or the first after it)."""
    return lambda applied: applied.record.position.offset >= offset


def rewound(
    conversation_id: str, found: Scan, until_offset: int, reason: str
) -> ConversationRewound:
    """The event that makes the history what it was after ``until_offset``."""
    refuse_past_the_end(conversation_id, found, until_offset)
    then = valid_at(conversation_id, found, until_offset)
    ids = found.latest.recent_event_ids
    return ConversationRewound(
        until_offset=until_offset,
        messages=then.messages if then else (),
        summary=then.summary if then else None,
        reason=reason,
        basis_event_id=ids[-1] if ids else None,
    )


def replaced_tail(
    conversation_id: str,
    found: Scan,
    count: int,
    messages: Sequence[SnapshotMessage],
    expected_event_id: str | None,
    reason: str,
) -> ConversationRewound:
    """The event that makes the history its current one with its last ``count`` messages
    replaced by ``messages`` (none: removed). Each new message takes the ``event_id`` of
    the one it stands in for (at its place, else the last replaced), so what points at
    the original events still does.

    It is a rewind to the last event folded, carrying that history, on the basis of the
    latest event (the fold refuses it if another lands first). Refused when the history
    has fewer than ``count`` messages, when its last message is not ``expected_event_id``
    (the history changed since the caller read it), and when the history would not be
    valid to send.
    """
    check_replacement(count, messages)
    latest = found.latest
    if len(latest.messages) < count:
        had = len(latest.messages)
        raise OperationRefused(
            f"nothing to replace: {conversation_id!r} has no messages"
            if not had
            else f"{conversation_id!r} has {had} messages, fewer than the {count} to replace"
        )
    kept, replaced = list(latest.messages[:-count]), latest.messages[-count:]
    last = replaced[-1]
    if expected_event_id is not None and last.event_id != expected_event_id:
        raise OperationRefused(
            f"the last message of {conversation_id!r} is event {last.event_id!r}, not "
            f"{expected_event_id!r}: the history changed since it was read (read it again)"
        )
    for index, message in enumerate(messages):
        stands_for = replaced[min(index, count - 1)]
        kept.append(replace(message, event_id=stands_for.event_id))
    problem = history_problem(kept)
    if problem is not None:
        done = "removing" if not messages else "replacing"
        raise OperationRefused(
            f"{done} the last {_messages(count)} of {conversation_id!r} would leave a history "
            f"that is not valid to send: {problem}"
        )
    ids = latest.recent_event_ids
    return ConversationRewound(
        until_offset=found.last_offset,
        messages=tuple(kept),
        summary=latest.summary,
        reason=reason,
        basis_event_id=ids[-1] if ids else None,
    )


def _messages(count: int) -> str:
    return "message" if count == 1 else f"{count} messages"


def check_replacement(count: object, messages: object) -> None:
    """What replaces the history's tail: a count of at least one, and history messages."""
    if isinstance(count, bool) or not isinstance(count, int) or count < 1:
        raise InvalidInputError(
            f"count is the number of last messages to replace (1 or more), not {count!r}"
        )
    if not isinstance(messages, list | tuple) or not all(
        isinstance(m, SnapshotMessage) for m in messages
    ):
        raise InvalidInputError(
            f"expected a list of SnapshotMessage, got {type(messages).__name__}"
        )


def last_user_message(conversation_id: str, found: Scan, ask_again: bool) -> tuple[int, str]:
    """The offset and text of the last user message an undo goes back before; with
    ``ask_again``, refused when a chat request cannot carry it (multimodal content)."""
    message = next((m for m in reversed(found.latest.messages) if m.role == "user"), None)
    if message is None:
        raise OperationRefused(f"nothing to undo: {conversation_id!r} has no user message")
    at = found.events_by_id.get(message.event_id or "")
    if at is None or not isinstance(at[1].body, UserMessage):
        raise OperationRefused(
            f"the last user message of {conversation_id!r} came with its fork: undo cannot "
            "go back past a fork (fork the source again at an earlier offset)"
        )
    offset, user = at[0], at[1].body
    if ask_again and (user.content_json is not None or not user.text.strip()):
        raise OperationRefused(
            "the last user message has multimodal content or no text, which a chat "
            "request cannot carry: undo it, then ask again"
        )
    return offset, user.text


def regeneration(
    conversation_id: str,
    records: Sequence[LogRecord],
    policy: PolicyTimeline,
    keys: KeyLookup | None,
    limits: RecordLimits,
) -> tuple[ConversationRewound, str]:
    """The rewind a regenerate's turn is appended after, and the user message it asks
    again: an undo's, decided from the conversation's ``records`` as undo decides it
    (refused as undo is, and when the rewind would not fit ``limits``: it is never cut
    down), for the turn to run on the history it leaves."""
    found = scan(conversation_id, fold_records(records, policy, keys=keys), copies_content=True)
    offset, text = last_user_message(conversation_id, found, ask_again=True)
    then = scan(conversation_id, fold_records(records, policy, keys=keys), from_offset(offset))
    body = rewound(conversation_id, then, offset - 1, "regenerate")
    event_record(limits, SOURCE, conversation_id, body)  # fits, or refused
    return body, text


def fork_stop(
    source_id: str, new_id: str, before_offset: int | None, as_of: datetime | None
) -> Stop | None:
    """Where a fork's history ends (None: with the source's last event); bad arguments
    are refused."""
    if before_offset is not None and as_of is not None:
        raise InvalidInputError("give before_offset or as_of, not both")
    if before_offset is not None and before_offset < 0:
        raise InvalidInputError(f"before_offset must be 0 or more, got {before_offset}")
    check_conversation_id(source_id)
    check_conversation_id(new_id)
    if new_id == source_id:
        raise OperationRefused("a fork needs a new conversation id, not the source's")
    if before_offset is not None:
        return from_offset(before_offset)
    if as_of is not None:
        return lambda applied: applied.event.occurred_at > as_of
    return None


def refuse_fork_into(new_id: str, has_events: bool) -> None:
    if has_events:
        raise OperationRefused(f"{new_id!r} already has events: fork into a new conversation")


def forked(source_id: str, found: Scan, before_offset: int | None) -> ConversationForked:
    """The event that starts a fork with ``source_id``'s history as ``found`` kept it."""
    until = before_offset - 1 if before_offset is not None else found.kept_until
    refuse_past_the_end(source_id, found, until, shift=1, option="before_offset")
    then = valid_at(source_id, found, until, shift=1, option="before_offset")
    return ConversationForked(
        source_conversation_id=source_id,
        source_partition=found.partition,
        until_offset=until,
        messages=then.messages if then else (),
        summary=then.summary if then else None,
    )


def metadata_change(
    conversation_id: str,
    title: str | None,
    owner: str | None,
    tags: Iterable[str] | None,
    attributes: Mapping[str, str | None] | None,
    policy: PolicyTimeline,
    stored: ConversationSnapshot | None = None,
) -> MetadataSet:
    """The change asked for, refused before anything is appended when the fold could
    never take it, or would not take it on the conversation as ``stored`` (a retry of
    that cannot succeed: no "try again", and no event the fold is sure to refuse)."""
    check_conversation_id(conversation_id)
    change = MetadataSet(
        title=title,
        owner=owner,
        tags=None if tags is None else tuple(tags),
        attributes=dict(attributes or {}),
    )
    problem = metadata_problem(None, change, policy.latest.max_bytes)
    if problem is not None:
        raise InvalidInputError(f"metadata not set: {problem}")
    if stored is not None and stored.deleted:
        raise OperationRefused(
            f"metadata not set: conversation {conversation_id!r} was deleted; nothing appended"
        )
    problem = None if stored is None else metadata_problem(stored, change, policy.latest.max_bytes)
    if problem is not None:
        raise OperationRefused(
            f"metadata not set: the conversation would have {problem}; nothing appended "
            "(remove some first)"
        )
    return change


def refuse_past_the_end(
    conversation_id: str,
    found: Scan,
    until_offset: int,
    shift: int = 0,
    option: str = "until_offset",
) -> None:
    """An offset past the conversation's last event names a history it never had (it
    would take the conversation's future events as they come): refused, naming the
    last offset (as the caller's ``option`` counts it: ``shift`` 1 for an exclusive one)."""
    if until_offset > found.last_offset:  # the log's state refuses it, as a conflict
        raise OperationRefused(
            f"{option} {until_offset + shift} is past the end of {conversation_id!r}: its "
            f"last event is at offset {found.last_offset}, so {option} can be at most "
            f"{found.last_offset + shift}"
        )


def valid_at(
    conversation_id: str,
    found: Scan,
    until_offset: int,
    shift: int = 0,
    option: str = "until_offset",
) -> ConversationSnapshot | None:
    """The conversation as of ``until_offset`` (``found.kept``); refused where no history
    may stop. The error names the nearest points that work, as the caller's ``option``
    counts them (``shift``: 1 for an exclusive offset)."""
    then = found.kept
    if then is None or history_problem(then.messages) is None:
        return then
    before = max((o for o in found.valid_offsets if o < until_offset), default=-1)
    after = min((o for o in found.valid_offsets if o > until_offset), default=None)
    nearest = f"{before + shift}" + (f" or {after + shift}" if after is not None else "")
    raise OperationRefused(
        f"offset {until_offset} of {conversation_id!r} is between a tool call and its "
        f"results, where the history is not valid to send; the nearest {option} that "
        f"work: {nearest}"
    )


def applied_at(
    outcomes: Iterable[Applied | Rejected],
    event: ConversationEvent,
    policy: PolicyTimeline,
    topic: str,
) -> TopicPosition | None:
    """Where ``event`` is in the log, once the fold applied it; None: not there yet.

    Raises :class:`OperationRefused` when the fold took it in but refused it (the
    conversation changed since the operation read it)."""
    before: ConversationSnapshot | None = None
    for outcome in outcomes:
        if not isinstance(outcome, Applied):
            continue
        if outcome.event.event_id == event.event_id:
            where = outcome.record.position
            position = TopicPosition(topic, where.partition, where.offset)
            problem = refusal(before, event, policy.at(where))
            if problem is not None:
                raise OperationRefused(
                    f"appended at {position}, but the fold did not apply it: {problem}; "
                    "nothing changed (try again)"
                )
            return position
        before = outcome.snapshot
    return None


def forks_of(
    conversation_id: str, snapshots: Mapping[str, ConversationSnapshot]
) -> tuple[str, ...]:
    """The conversations forked from this one, and from those, in order: each holds a
    copy of history it took from here."""
    children: dict[str, list[str]] = {}
    for fork_id, snapshot in sorted(snapshots.items()):
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


def idle(snapshots: Mapping[str, ConversationSnapshot], days: float, now: datetime) -> list[str]:
    """Conversations with content whose last event is more than ``days`` old: what a
    retention policy erases. One erased with nothing since is not listed again."""
    check_days(days)
    before = now - timedelta(days=days)
    return sorted(
        conversation_id
        for conversation_id, snapshot in snapshots.items()
        if snapshot.updated_at is not None
        and snapshot.updated_at < before
        and not erased_since_last_event(snapshot)
    )


def check_days(days: float) -> None:
    """How idle a conversation must be to be listed: more than 0 days."""
    if days <= 0:
        raise InvalidInputError(f"days must be more than 0, got {days}")


def _refuse_unopened(conversation_id: str, found: Scan) -> None:
    """An operation that copies history must not copy ``[erased]`` marks in place of
    content this process merely cannot open; content an erasure cleared is no loss."""
    unread = not_erased(found.unopened, found.latest)
    if unread:
        raise OperationRefused(
            f"{len(unread)} sealed events of {conversation_id!r} (from offset {unread[0]}) "
            "cannot be opened here: set GOAICORE_MASTER_KEYS to the master keys they were "
            "sealed under, or the operation would copy erasure marks instead of content"
        )


def erased_since_last_event(snapshot: ConversationSnapshot) -> bool:
    """The conversation's last event is an erasure: erasing it again would change nothing."""
    erased, last = snapshot.erased_before, snapshot.last_position
    return erased is not None and last is not None and erased.offset >= last.offset
