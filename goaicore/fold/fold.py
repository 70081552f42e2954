"""``fold(snapshot, event, position) -> snapshot``: the one pure fold.

No I/O, no clock, no randomness: the stream processor, ``goaicore replay`` and
``goaicore verify`` all call this function, so a replay of the log reproduces
a stored snapshot exactly. It never raises on a well-formed event: an event
that cannot be applied as intended (a tool result answering no call, anything
after deletion) is recorded as an anomaly and not applied.

Idempotence: an event at or below the snapshot's last applied position (a
redelivery) returns the snapshot unchanged. An event whose id is in the
recent-id window (the same event published again) leaves the history and the
counts of applied events unchanged; only the position moves past it and
``duplicate_count`` counts it.

Where the compiled core is installed, :func:`fold` runs its fold of the common events
first (:mod:`goaicore.fold.native`) and this module's for whatever it hands back;
:func:`python_fold` is this module's alone, the definition both are held to.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from goaicore.fold.admission import MAX_CONVERSATION_ID_BYTES
from goaicore.fold.bound import anomalies_with, bounded, with_anomaly
from goaicore.fold.carried import history_problem
from goaicore.fold.compaction import CompactionMismatch, apply_compaction_record
from goaicore.fold.evolve import SnapshotChanges, evolve
from goaicore.fold.metadata import metadata_changes, metadata_problem
from goaicore.fold.native import native_folder
from goaicore.fold.pending import note_appended, pending_caller, unanswered_calls
from goaicore.fold.policy import DEFAULT_POLICY, MAX_EARLIER_BOUNDS, FoldPolicy
from goaicore.fold.size import note_inserted, note_window_slid
from goaicore.records import (
    EVENT_BODY_TYPES,
    AssistantTurn,
    CompactionApplied,
    ConversationDeleted,
    ConversationErased,
    ConversationEvent,
    ConversationForked,
    ConversationReset,
    ConversationRewound,
    ConversationSnapshot,
    EventBody,
    FoldBounds,
    ForkOrigin,
    GameEvent,
    LogPosition,
    MetadataSet,
    SnapshotMessage,
    ToolResult,
    TurnFailed,
    UserMessage,
)


def fold(
    snapshot: ConversationSnapshot | None,
    event: ConversationEvent,
    position: LogPosition,
    policy: FoldPolicy = DEFAULT_POLICY,
) -> ConversationSnapshot:
    """The snapshot after applying ``event``, read from the log at ``position``."""
    params = policy.native_params
    if params is not None:
        folder = native_folder()
        if folder is not None:
            folded: ConversationSnapshot | None = folder(snapshot, event, position, params)
            if folded is not None:
                return folded
    return python_fold(snapshot, event, position, policy)


def python_fold(
    snapshot: ConversationSnapshot | None,
    event: ConversationEvent,
    position: LogPosition,
    policy: FoldPolicy = DEFAULT_POLICY,
) -> ConversationSnapshot:
    """:func:`fold` in Python alone: the definition the compiled fold is held to."""
    if snapshot is None:
        snapshot = ConversationSnapshot(conversation_id=event.conversation_id)
    last = snapshot.last_position
    if last is not None and last.partition == position.partition and position.offset <= last.offset:
        return snapshot
    snapshot = _under(snapshot, policy)
    if event.event_id in snapshot.recent_event_ids:
        return evolve(
            snapshot, last_position=position, duplicate_count=snapshot.duplicate_count + 1
        )
    seen = _seen(snapshot, event, position, policy)
    problem = refusal(snapshot, event, policy)
    if problem is None:
        try:
            # An applied event copies the snapshot once: its own changes and the bookkeeping
            # together (fields of their own: neither sets the other's).
            changes = _apply(snapshot, event, position, policy)
            changes.update(seen)
            applied = evolve(snapshot, **changes)
        except CompactionMismatch as err:
            problem = f"compaction not applied: {err}"
    if problem is not None:
        note = f"{_where(event, position, policy)}: {problem}"
        noted = with_anomaly(evolve(snapshot, **seen), note, policy)
        if policy.max_bytes is None:
            return noted  # fold version 1 bounded only what an applied event added
        return bounded(noted, policy, lambda: _where(event, position, policy), position)
    return bounded(applied, policy, lambda: _where(event, position, policy), position)


def _under(snapshot: ConversationSnapshot, policy: FoldPolicy) -> ConversationSnapshot:
    """``snapshot`` marked with the fold version and size bound it is folded under from now
    on; the bounds its events so far were folded under are remembered for a replay."""
    max_bytes = policy.max_bytes or 0
    if snapshot.format_version == policy.version and snapshot.max_bytes == max_bytes:
        return snapshot
    earlier = snapshot.earlier_bounds
    if snapshot.last_position is not None:
        stretch = FoldBounds(
            format_version=snapshot.format_version,
            max_bytes=snapshot.max_bytes,
            until=snapshot.last_position,
        )
        earlier = (*earlier, stretch)[-MAX_EARLIER_BOUNDS:]
    return evolve(
        snapshot, format_version=policy.version, max_bytes=max_bytes, earlier_bounds=earlier
    )


def _seen(
    snapshot: ConversationSnapshot,
    event: ConversationEvent,
    position: LogPosition,
    policy: FoldPolicy,
) -> SnapshotChanges:
    """Bookkeeping for every event not skipped as a duplicate: position, ids, times."""
    body_type = type(event.body).__name__
    by_type = dict(snapshot.events_by_type)
    by_type[body_type] = by_type.get(body_type, 0) + 1
    ids = snapshot.recent_event_ids
    if policy.max_id_chars is None or len(event.event_id) <= policy.max_id_chars:
        ids = (*ids, event.event_id)[-policy.recent_ids :]
        note_window_slid(ids, snapshot.recent_event_ids)
    return SnapshotChanges(
        last_position=position,
        recent_event_ids=ids,
        event_count=snapshot.event_count + 1,
        events_by_type=by_type,
        started_at=snapshot.started_at or event.occurred_at,
        updated_at=event.occurred_at,
    )


def refusal(
    snapshot: ConversationSnapshot | None, event: ConversationEvent, policy: FoldPolicy
) -> str | None:
    """Why the fold records ``event`` as an anomaly instead of applying it to ``snapshot``
    (None: a new conversation), or None when it applies it. A writer that must know
    whether its event took effect asks this, never the notes (an applied event may
    leave a size-policy note too). A compaction can also fail while being applied."""
    if snapshot is None:
        snapshot = ConversationSnapshot(conversation_id=event.conversation_id)
    if event.conversation_id != snapshot.conversation_id:
        other = _short(event.conversation_id, policy)
        return f"event of conversation {other!r} in this conversation's fold"
    if policy.max_id_chars is not None and len(event.event_id) > policy.max_id_chars:
        return f"an event id of {len(event.event_id)} characters (at most {policy.max_id_chars})"
    if snapshot.deleted and not isinstance(event.body, ConversationErased):
        return f"{type(event.body).__name__} after the conversation was deleted"
    body = event.body
    if isinstance(body, ToolResult):
        pending = unanswered_calls(snapshot.messages)
        if body.tool_call_id not in pending:
            call = _short(body.tool_call_id, policy)
            return f"tool result for {call!r} answers no pending tool call"
    if isinstance(body, UserMessage | AssistantTurn | GameEvent):
        pending = unanswered_calls(snapshot.messages)
        if pending and isinstance(body, UserMessage | AssistantTurn):
            return f"{type(body).__name__} while tool calls {sorted(pending)} are unanswered"
    if isinstance(body, ConversationRewound) and body.basis_event_id is not None:
        latest = snapshot.recent_event_ids[-1] if snapshot.recent_event_ids else None
        if latest != body.basis_event_id:
            basis = _short(body.basis_event_id, policy)
            return f"ConversationRewound computed on a history since changed (basis {basis!r})"
    if isinstance(body, ConversationRewound | ConversationForked):
        carried = history_problem(body.messages)
        if carried is not None:
            return f"{type(body).__name__} not applied: its history is not valid ({carried})"
    if isinstance(body, ConversationForked):
        if snapshot.messages or snapshot.forked_from is not None:
            return "ConversationForked into a conversation that already has a history"
        if len(body.source_conversation_id.encode()) > MAX_CONVERSATION_ID_BYTES:
            return "ConversationForked from a conversation id too long for a snapshot"
    if isinstance(body, MetadataSet):
        return metadata_problem(snapshot, body, policy.max_bytes)
    return None


def _apply(
    snapshot: ConversationSnapshot,
    event: ConversationEvent,
    position: LogPosition,
    policy: FoldPolicy,
) -> SnapshotChanges:
    """The fields ``event`` changes in ``snapshot`` (its bookkeeping aside: :func:`_seen`)."""
    rule = _RULES.get(type(event.body))
    if rule is None:
        note = f"{_where(event, position, policy)}: unknown body"
        return SnapshotChanges(anomalies=anomalies_with(snapshot, note, policy))
    return rule(snapshot, event.body, event.event_id, position)


def history_message(body: EventBody, event_id: str | None) -> SnapshotMessage | None:
    """The message a body adds to the history (None: it adds none): the one rule for
    the fold and for the history operations that carry messages."""
    if isinstance(body, UserMessage):
        return SnapshotMessage(
            role="user",
            text=body.text,
            name=body.name,
            content_json=body.content_json,
            raw_json=body.raw_json,
            provider=body.provider,
            event_id=event_id,
        )
    if isinstance(body, AssistantTurn):
        return SnapshotMessage(
            role="assistant",
            text=body.text,
            tool_calls=body.tool_calls,
            raw_json=body.raw_json,
            provider=body.provider or None,
            event_id=event_id,
        )
    if isinstance(body, ToolResult):
        return SnapshotMessage(
            role="tool",
            text=body.content,
            tool_call_id=body.tool_call_id,
            name=body.name,
            raw_json=body.raw_json,
            provider=body.provider,
            is_error=body.is_error,
            event_id=event_id,
        )
    if isinstance(body, GameEvent):
        # A context message: the model sees the game event's text where it happened.
        return SnapshotMessage(role="system", text=body.text, name=body.kind, event_id=event_id)
    return None


def _adds_message(
    snapshot: ConversationSnapshot, body: EventBody, eid: str, _: LogPosition
) -> SnapshotChanges:
    message = history_message(body, eid)
    assert message is not None  # the rule of a body that adds one
    return _append(snapshot, message)


def _assistant(
    snapshot: ConversationSnapshot, body: AssistantTurn, eid: str, position: LogPosition
) -> SnapshotChanges:
    usage = body.usage
    prompt, completion = (usage.prompt_tokens, usage.completion_tokens) if usage else (0, 0)
    return SnapshotChanges(
        **_adds_message(snapshot, body, eid, position),
        prompt_tokens=_long_sum(snapshot.prompt_tokens, prompt),
        completion_tokens=_long_sum(snapshot.completion_tokens, completion),
        cost_usd_nanos=_long_sum(snapshot.cost_usd_nanos, body.cost_usd_nanos or 0),
    )


LONG_MIN, LONG_MAX = -(2**63), 2**63 - 1


def _long_sum(total: int, added: int) -> int:
    """``total + added`` held inside a long, as the snapshot stores it: each addend is a
    long (the event's schema), but a producer's counts can sum past one, and a snapshot
    that cannot be written would stop its conversation."""
    return min(max(total + added, LONG_MIN), LONG_MAX)


def _compaction(
    snapshot: ConversationSnapshot, body: CompactionApplied, _eid: str, _: LogPosition
) -> SnapshotChanges:
    kept = apply_compaction_record(snapshot.messages, body)
    # The summary (if any) is now a context message in the history; the snapshot
    # also keeps the latest one for readers who want it without the transcript.
    return SnapshotChanges(messages=kept, summary=body.summary or snapshot.summary)


def _turn_failed(*_: object) -> SnapshotChanges:
    return SnapshotChanges()  # audit only: counted in events_by_type, never sent to the model


def _reset(*_: object) -> SnapshotChanges:
    return SnapshotChanges(messages=(), summary=None)


def _deleted(*_: object) -> SnapshotChanges:
    # The metadata may name a person (a title, an owner): it goes with the history.
    return SnapshotChanges(
        messages=(), summary=None, deleted=True, title=None, owner=None, tags=(), attributes={}
    )


def _rewound(
    _snapshot: ConversationSnapshot, body: ConversationRewound, _eid: str, _: LogPosition
) -> SnapshotChanges:
    # The log keeps what came after until_offset; the history is as it stood then.
    return SnapshotChanges(messages=body.messages, summary=body.summary)


def _forked(
    _snapshot: ConversationSnapshot, body: ConversationForked, _eid: str, _: LogPosition
) -> SnapshotChanges:
    origin = ForkOrigin(
        conversation_id=body.source_conversation_id,
        partition=body.source_partition,
        until_offset=body.until_offset,
    )
    return SnapshotChanges(messages=body.messages, summary=body.summary, forked_from=origin)


def _metadata(
    snapshot: ConversationSnapshot, body: MetadataSet, _eid: str, _: LogPosition
) -> SnapshotChanges:
    return metadata_changes(snapshot, body)


def _erased_rule(
    _snapshot: ConversationSnapshot, _body: ConversationErased, _eid: str, position: LogPosition
) -> SnapshotChanges:
    return _erased(position)


def _erased(position: LogPosition) -> SnapshotChanges:
    """Everything derived from content leaves: the history, the summary, the metadata, and
    the notes and size counts (they depend on the content's size). A replay whose sealed
    content can no longer be opened folds to this same snapshot; the counts, ids, times,
    tokens and costs stay."""
    return SnapshotChanges(
        messages=(),
        summary=None,
        anomalies=(),
        dropped_messages=0,
        dropped_before=None,
        truncated_messages=0,
        title=None,
        owner=None,
        tags=(),
        attributes={},
        erased_before=position,
    )


_Rule = Callable[[ConversationSnapshot, Any, str, LogPosition], SnapshotChanges]

_RULES: Mapping[type[Any], _Rule] = {
    UserMessage: _adds_message,
    AssistantTurn: _assistant,
    ToolResult: _adds_message,
    GameEvent: _adds_message,
    CompactionApplied: _compaction,
    TurnFailed: _turn_failed,
    ConversationReset: _reset,
    ConversationDeleted: _deleted,
    ConversationRewound: _rewound,
    ConversationForked: _forked,
    MetadataSet: _metadata,
    ConversationErased: _erased_rule,
}
"""How each body type changes a snapshot: one rule for every type of the registry."""

_unruled = set(EVENT_BODY_TYPES) ^ set(_RULES)
if _unruled:  # a body type added to the registry without its rule cannot be folded
    raise ImportError(f"the fold has no rule for {sorted(t.__name__ for t in _unruled)}")


def _append(snapshot: ConversationSnapshot, message: SnapshotMessage) -> SnapshotChanges:
    """Add ``message`` at the end, or, while tool calls are pending, before their call.

    Another producer's message can land in the log between a tool call and its
    result; placing it before the calling assistant message keeps every tool call
    next to its results, so the history stays valid to send.
    """
    messages = snapshot.messages
    caller = pending_caller(messages) if message.role in ("user", "system") else None
    if caller is None:
        placed = (*messages, message)
    else:
        placed = (*messages[:caller], message, *messages[caller:])
    note_inserted(placed, messages, message)
    note_appended(placed, messages, message)
    return SnapshotChanges(messages=placed, message_count=snapshot.message_count + 1)


def _where(event: ConversationEvent, position: LogPosition, policy: FoldPolicy) -> str:
    return f"event {_short(event.event_id, policy)} at {position.partition}@{position.offset}"


def _short(text: str, policy: FoldPolicy, limit: int = 80) -> str:
    """``text`` for a note: a caller's id can be any length, a note stays small (version 2)."""
    if policy.max_id_chars is None or len(text) <= limit:
        return text
    return f"{text[:limit]}... ({len(text)} characters)"
