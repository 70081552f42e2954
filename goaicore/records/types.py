"""Typed records mirroring the Avro schemas in ``schemas/`` (the wire contract).

Each class has the name of its Avro record and the same fields, in the same order, with
the same defaults, so a reader of the schema knows the Python type and the other way
round. Records are frozen plain data: no I/O, no clock, no ids are made here (see
``goaicore.records.new`` for helpers that fill ids and timestamps).

Sequences are stored as tuples and maps as dicts: ``__post_init__`` normalises what
callers pass, so a record built from lists compares equal to the same record decoded
from bytes.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from typing import TypeAlias


def _freeze(record: object, name: str, items: Sequence[object]) -> None:
    # Anything else (a str, a number) is left for the encoder to reject with a clear error.
    if type(items) is not tuple and isinstance(items, Sequence) and not isinstance(items, str):
        object.__setattr__(record, name, tuple(items))


def _freeze_map(record: object, name: str, values: Mapping[str, object]) -> None:
    if type(values) is not dict and isinstance(values, Mapping):
        object.__setattr__(record, name, dict(values))


@dataclass(frozen=True, slots=True)
class ToolCall:
    """One tool invocation requested by the model; ``arguments`` is the model's raw JSON.

    The same type in records and in the conversation library's messages.
    """

    id: str
    name: str
    arguments: str

    def to_json(self) -> dict[str, str]:
        return {"id": self.id, "name": self.name, "arguments": self.arguments}


@dataclass(frozen=True, slots=True, kw_only=True)
class Usage:
    """Token counts of one model call, or summed over ``llm_calls`` calls.

    ``prompt_tokens`` includes cached and cache-write input tokens, so that it means the
    same thing for every provider. The same type serves the conversation library and the
    records: a turn's usage is written as it was counted.
    """

    prompt_tokens: int = 0
    completion_tokens: int = 0
    total_tokens: int = 0
    llm_calls: int = 1

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            prompt_tokens=self.prompt_tokens + other.prompt_tokens,
            completion_tokens=self.completion_tokens + other.completion_tokens,
            total_tokens=self.total_tokens + other.total_tokens,
            llm_calls=self.llm_calls + other.llm_calls,
        )

    def as_dict(self) -> dict[str, int]:
        return {
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "total_tokens": self.total_tokens,
            "llm_calls": self.llm_calls,
        }

    @classmethod
    def of_call(cls, prompt_tokens: int, completion_tokens: int) -> Usage:
        """The usage of one LLM call."""
        return cls(
            prompt_tokens=prompt_tokens,
            completion_tokens=completion_tokens,
            total_tokens=prompt_tokens + completion_tokens,
        )


NO_USAGE = Usage(llm_calls=0)
"""Nothing spent yet: what a turn's usage starts from."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Sealed:
    """A record sealed under its conversation's data key: the whole record as written,
    encrypted (see ``goaicore.sealing``); beside it, only the record's skeleton."""

    key_id: str
    data: bytes = field(repr=False)


@dataclass(frozen=True, slots=True, kw_only=True)
class UserMessage:
    """A message written by the human participant.

    ``raw_json`` (v5) keeps the message as its provider's API holds it (one JSON object,
    e.g. a Responses API input item), byte for byte, in ``provider``'s format: sent back
    verbatim to that provider; the other fields are what every other provider reads.
    """

    text: str
    content_json: str | None = None
    name: str | None = None
    raw_json: str | None = None
    provider: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class AssistantTurn:
    """One model reply; ``raw_json`` keeps the provider's message byte for byte."""

    text: str = ""
    tool_calls: tuple[ToolCall, ...] = ()
    finish_reason: str | None = None
    usage: Usage | None = None
    provider: str = ""
    model: str = ""
    raw_json: str | None = None
    cost_usd_nanos: int | None = None

    def __post_init__(self) -> None:
        _freeze(self, "tool_calls", self.tool_calls)


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolResult:
    """The outcome of one tool call, answering the ``ToolCall`` with ``tool_call_id``.

    ``raw_json`` and ``provider`` (v5) as for ``UserMessage``: the result as its
    provider's API holds it (e.g. a Responses API ``function_call_output`` item).
    """

    tool_call_id: str
    name: str
    content: str
    is_error: bool = False
    raw_json: str | None = None
    provider: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class GameEvent:
    """Something that happened in the application, told to the model as ``text``."""

    kind: str
    text: str
    attributes: Mapping[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        _freeze_map(self, "attributes", self.attributes)


@dataclass(frozen=True, slots=True, kw_only=True)
class CompactedRange:
    """Messages ``first_index..last_index`` replaced by a context ``note`` (or dropped)."""

    first_index: int
    last_index: int
    note: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class CompactionApplied:
    """Messages ``first_index..last_index`` (inclusive) of the history were replaced.

    With ``replacements`` (v2), exactly those ranges were replaced, each by its note;
    ``basis_message_count`` (v2) is the length of the history it was computed from.
    """

    strategy: str
    first_index: int
    last_index: int
    removed_count: int = 0
    tokens_before: int = 0
    tokens_after: int = 0
    summary: str | None = None
    basis_event_id: str | None = None
    replacements: tuple[CompactedRange, ...] = ()
    basis_message_count: int | None = None

    def __post_init__(self) -> None:
        _freeze(self, "replacements", self.replacements)


@dataclass(frozen=True, slots=True, kw_only=True)
class TurnFailed:
    """The turn for ``request_id`` failed; ``kind`` is machine-readable."""

    request_id: str
    kind: str
    message: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class ConversationReset:
    """The history starts afresh from here."""

    reason: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class ConversationDeleted:
    """The conversation was deleted."""

    reason: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class ConversationRewound:
    """The history goes back to what it was after the event at ``until_offset`` (undo,
    rewind); it carries that history, folded from the log, so a replay needs nothing else."""

    until_offset: int
    messages: tuple[SnapshotMessage, ...] = ()
    summary: str | None = None
    reason: str = ""
    basis_event_id: str | None = None

    def __post_init__(self) -> None:
        _freeze(self, "messages", self.messages)


@dataclass(frozen=True, slots=True, kw_only=True)
class ConversationForked:
    """The conversation starts as a copy of another's history at a log position."""

    source_conversation_id: str
    source_partition: int
    until_offset: int
    messages: tuple[SnapshotMessage, ...] = ()
    summary: str | None = None

    def __post_init__(self) -> None:
        _freeze(self, "messages", self.messages)


@dataclass(frozen=True, slots=True, kw_only=True)
class MetadataSet:
    """Changes the conversation's metadata; a field left None keeps its value, an empty
    title or owner removes it, and an attribute set to None is removed."""

    title: str | None = None
    owner: str | None = None
    tags: tuple[str, ...] | None = None
    attributes: Mapping[str, str | None] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.tags is not None:
            _freeze(self, "tags", self.tags)
        _freeze_map(self, "attributes", self.attributes)


@dataclass(frozen=True, slots=True, kw_only=True)
class ConversationErased:
    """The conversation's content was erased: its data key is destroyed, so every sealed
    copy of its text is unreadable; ids, types, times, token counts and costs stay."""

    reason: str = ""


EventBody: TypeAlias = (
    UserMessage
    | AssistantTurn
    | ToolResult
    | GameEvent
    | CompactionApplied
    | TurnFailed
    | ConversationReset
    | ConversationDeleted
    | ConversationRewound
    | ConversationForked
    | MetadataSet
    | ConversationErased
)
"""Every body type, as the schema's union holds them (their registry: ``event_types``)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ConversationEvent:
    """One fact in a conversation's log: an envelope around one ``EventBody``.

    ``occurred_at`` must be timezone-aware; it travels with millisecond precision.
    """

    event_id: str
    conversation_id: str
    occurred_at: datetime
    source: str = ""
    causation_id: str | None = None
    body: EventBody
    sealed: Sealed | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class ConversationKey:
    """A conversation's data key as the keys topic holds it: wrapped under a master key.

    ``wrapped`` opens only with that master key and only for this conversation and
    ``key_id`` (``goaicore.sealing.keys``); a tombstone in its place means erased.
    """

    conversation_id: str
    key_id: str
    master_key_id: str
    wrapped: bytes = field(repr=False)
    created_at: datetime
    after_erasure_offset: int | None = None
    """The offset in ``events`` of the erasure this key was made after (None: none)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ChatRequest:
    """Ask for the assistant's next turn; answered by one ``ChatReply`` per ``request_id``."""

    request_id: str
    conversation_id: str
    text: str
    system: str | None = None
    tools: tuple[str, ...] = ()
    model: str | None = None
    deadline: datetime | None = None
    stream: bool = False
    """Stream the reply's text to ``reply-stream`` as it is generated (``ReplyChunk``s)."""
    cancel: bool = False
    """Not a turn of its own: stop the running turn of ``request_id`` in this conversation,
    which ends with what it generated so far."""
    regenerate: bool = False
    """Regenerate the last exchange: the turn runs on the history with the last user
    message and what followed it undone, and its events are appended after the rewind
    that undoes them, together: a turn that fails appends no rewind."""

    def __post_init__(self) -> None:
        _freeze(self, "tools", self.tools)


class ReplyStatus(StrEnum):
    """Outcome of a chat request (the Avro enum ``ReplyStatus``; unknown symbols read as error)."""

    OK = "ok"
    ERROR = "error"
    TIMEOUT = "timeout"
    REJECTED = "rejected"
    CANCELLED = "cancelled"
    """The turn was cancelled by request; its reply has the text generated until then."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ChatReply:
    """The answer to one ``ChatRequest``: ``text`` when ok, ``error`` otherwise; a cancelled
    turn's reply has the text generated until then."""

    request_id: str
    conversation_id: str
    status: ReplyStatus
    text: str | None = None
    error: str | None = None
    usage: Usage | None = None
    latency_ms: int = 0
    sealed: Sealed | None = None


class ReplyChunkKind(StrEnum):
    """What a ``ReplyChunk`` tells (the Avro enum ``ReplyChunkKind``; unknown symbols read
    as ``UNKNOWN``, which a reader skips)."""

    UNKNOWN = "unknown"
    """A kind added after this reader: skip the chunk."""
    START = "start"
    """A run began."""
    DELTA = "delta"
    """Text the model generated."""
    TOOL_CALL = "tool_call"
    """The model asked for a tool: the complete call."""
    TOOL_RESULT = "tool_result"
    """A tool returned."""
    END = "end"
    """The run finished (its ``ChatReply`` is on ``replies``); no chunk of the run follows."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ReplyChunk:
    """One piece of a reply as it is generated, on ``reply-stream`` (keyed by conversation).

    ``run_id`` names one run of the request by a worker, new each time a worker starts it:
    a second ``run_id`` for a request means the turn restarted, and the text shown so far
    is to be discarded. ``seq`` numbers a run's chunks from 0.
    """

    request_id: str
    conversation_id: str
    run_id: str
    seq: int
    kind: ReplyChunkKind
    text: str = ""
    tool_call_id: str | None = None
    tool_name: str | None = None
    arguments: str | None = None
    is_error: bool = False
    occurred_at: datetime


@dataclass(frozen=True, slots=True, kw_only=True)
class SnapshotMessage:
    """One history message of a snapshot, in the neutral provider-independent form."""

    role: str
    text: str = ""
    tool_calls: tuple[ToolCall, ...] = ()
    tool_call_id: str | None = None
    name: str | None = None
    content_json: str | None = None
    raw_json: str | None = None
    provider: str | None = None
    is_error: bool = False
    event_id: str | None = None

    def __post_init__(self) -> None:
        _freeze(self, "tool_calls", self.tool_calls)


@dataclass(frozen=True, slots=True, kw_only=True)
class LogPosition:
    """A record's position in a Kafka topic."""

    partition: int
    offset: int


@dataclass(frozen=True, slots=True, kw_only=True)
class ForkOrigin:
    """Where a forked conversation's history came from."""

    conversation_id: str
    partition: int
    until_offset: int


@dataclass(frozen=True, slots=True, kw_only=True)
class FoldBounds:
    """The fold version and byte bound a stretch of a conversation's log was folded under,
    up to and including ``until``: a replay folds that stretch under them again."""

    format_version: int
    max_bytes: int
    until: LogPosition


@dataclass(frozen=True, slots=True, kw_only=True)
class ConversationSnapshot:
    """A conversation's state folded from its events (derived: a replay reproduces it)."""

    conversation_id: str
    format_version: int = 1
    messages: tuple[SnapshotMessage, ...] = ()
    summary: str | None = None
    last_position: LogPosition | None = None
    recent_event_ids: tuple[str, ...] = ()
    event_count: int = 0
    duplicate_count: int = 0
    events_by_type: Mapping[str, int] = field(default_factory=dict)
    message_count: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd_nanos: int = 0
    anomalies: tuple[str, ...] = ()
    deleted: bool = False
    started_at: datetime | None = None
    updated_at: datetime | None = None
    max_bytes: int = 0
    dropped_messages: int = 0
    dropped_before: LogPosition | None = None
    truncated_messages: int = 0
    title: str | None = None
    owner: str | None = None
    tags: tuple[str, ...] = ()
    attributes: Mapping[str, str] = field(default_factory=dict)
    forked_from: ForkOrigin | None = None
    earlier_bounds: tuple[FoldBounds, ...] = ()
    erased_before: LogPosition | None = None
    sealed: Sealed | None = None

    def __post_init__(self) -> None:
        _freeze(self, "messages", self.messages)
        _freeze(self, "recent_event_ids", self.recent_event_ids)
        _freeze_map(self, "events_by_type", self.events_by_type)
        _freeze(self, "anomalies", self.anomalies)
        _freeze(self, "tags", self.tags)
        _freeze_map(self, "attributes", self.attributes)
        _freeze(self, "earlier_bounds", self.earlier_bounds)


Record: TypeAlias = (
    ConversationEvent
    | ChatRequest
    | ChatReply
    | ConversationSnapshot
    | ConversationKey
    | ReplyChunk
)
