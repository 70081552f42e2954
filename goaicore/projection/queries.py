"""The auditor's questions of a projection of the log: the query port.

The console and the auditor's commands ask these of a :class:`ProjectionQueries`;
the PostgreSQL projection answers them (``goaicore.projection.postgres.queries``), so
another store of the projection plugs in here. What the answers hold is defined here,
with the port.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, NamedTuple, Protocol

from goaicore.errors import InputError
from goaicore.fold.policy import DEFAULT_POLICY, FoldPolicy, PolicyTimeline
from goaicore.projection.rows import DeadLetterRow, ReplyRow
from goaicore.records import ConversationEvent, ConversationSnapshot
from goaicore.records.avro.api import decode_event
from goaicore.records.event_types import BODY_TYPE_NAMES
from goaicore.replay.verify import VerifyReport

BODY_TYPES = BODY_TYPE_NAMES


@dataclass(frozen=True)
class StoredEvent:
    """One ``conversation_events`` row: the event's log position, envelope and body."""

    partition: int
    offset: int
    event_id: str
    conversation_id: str
    body_type: str
    occurred_at: datetime
    source: str
    causation_id: str | None
    body: dict[str, Any]
    text: str | None
    avro: bytes

    def event(self) -> ConversationEvent:
        """The event exactly as logged, decoded from the stored Avro bytes."""
        return decode_event(self.avro)


def check_types(types: Sequence[str]) -> None:
    unknown = sorted(set(types) - set(BODY_TYPES))
    if unknown:
        raise InputError(
            f"unknown event type {', '.join(unknown)} (known: {', '.join(BODY_TYPES)})"
        )


@dataclass(frozen=True)
class ConversationSummary:
    """One conversation: its event counts, first and last activity, snapshot totals.

    Activity is the events' ``occurred_at`` (the publishers' clocks). The
    snapshot fields are None until the conversation's snapshot is projected.
    ``dead_letters`` counts the projected dead letters keyed by the conversation.
    """

    conversation_id: str
    partition: int
    event_count: int
    message_count: int
    first_occurred_at: datetime
    last_occurred_at: datetime
    last_offset: int
    snapshot_offset: int | None
    deleted: bool | None
    prompt_tokens: int | None
    completion_tokens: int | None
    cost_usd_nanos: int | None
    failed_turns: int
    compactions: int
    dead_letters: int
    title: str | None = None
    owner: str | None = None
    tags: tuple[str, ...] = ()


@dataclass(frozen=True)
class ConversationFilter:
    """Which conversations a page lists; every condition given must hold."""

    text: str | None = None
    """Words in any of the conversation's events (web-search syntax, English stemming)."""
    active_from: datetime | None = None
    """Last activity at or after this time."""
    active_until: datetime | None = None
    """Last activity before this time."""
    has_failures: bool = False
    has_compactions: bool = False
    has_dead_letters: bool = False
    owner: str | None = None
    """Owned by exactly this owner (metadata)."""
    tags: tuple[str, ...] = ()
    """Tagged with every one of these tags."""
    title: str | None = None
    """Titled with this text somewhere in the title (any case)."""


EVERY_CONVERSATION = ConversationFilter()
"""The filter that every conversation passes."""


@dataclass(frozen=True)
class ConversationPage:
    """One page of the list, the number of conversations matching, and the next page."""

    rows: list[ConversationSummary]
    total: int
    next_cursor: str | None
    """Pass to ``conversation_page`` for the next page; None on the last page."""


@dataclass(frozen=True)
class LedgerEntry:
    """One assistant turn's usage."""

    partition: int
    offset: int
    occurred_at: datetime
    provider: str
    model: str
    prompt_tokens: int
    completion_tokens: int
    total_tokens: int
    llm_calls: int
    cost_usd_nanos: int | None


@dataclass(frozen=True)
class LedgerTotals:
    """A conversation's sums over its assistant turns."""

    conversation_id: str
    turns: int
    prompt_tokens: int
    completion_tokens: int
    total_tokens: int
    llm_calls: int
    cost_usd_nanos: int
    turns_without_cost: int


@dataclass(frozen=True)
class Ledger:
    conversation_id: str
    entries: list[LedgerEntry]
    totals: LedgerTotals

    @property
    def unpriced(self) -> list[str]:
        """``provider/model`` of the turns whose cost is unknown (no price for the model)."""
        return sorted({f"{e.provider}/{e.model}" for e in self.entries if e.cost_usd_nanos is None})


PERIODS = ("hour", "day", "week", "month")


@dataclass(frozen=True)
class UsagePeriod:
    """The assistant turns of one period (``start`` to the next period), all conversations."""

    start: datetime
    turns: int
    prompt_tokens: int
    completion_tokens: int
    cost_usd_nanos: int
    turns_without_cost: int


@dataclass(frozen=True)
class SearchHit:
    """An event whose text matches, with a snippet of its text (every character of the
    words shown kept) showing the match in [brackets]."""

    conversation_id: str
    partition: int
    offset: int
    body_type: str
    occurred_at: datetime
    rank: float
    snippet: str


class EventPoint(NamedTuple):
    """Where one stored event of a conversation is, and what and when it was."""

    partition: int
    offset: int
    body_type: str
    occurred_at: datetime


class ProjectionQueries(Protocol):
    """What the console and the auditor's commands ask of a projection (see the
    module docstring); each answer is read as the projection holds it now."""

    def history(
        self,
        conversation_id: str,
        types: Sequence[str] = (),
        since: datetime | None = None,
        until: datetime | None = None,
        limit: int | None = None,
    ) -> list[StoredEvent]:
        """The conversation's events in log order; ``since``/``until`` bound occurred_at."""
        ...

    def event_points(self, conversation_id: str) -> list[EventPoint]:
        """Where each of the conversation's events is, in log order."""
        ...

    def conversations(
        self,
        since: datetime | None = None,
        limit: int | None = None,
        where: ConversationFilter = EVERY_CONVERSATION,
    ) -> list[ConversationSummary]:
        """The conversations, newest activity first."""
        ...

    def conversation_page(
        self,
        where: ConversationFilter = EVERY_CONVERSATION,
        limit: int = 50,
        cursor: str | None = None,
    ) -> ConversationPage:
        """One page of the conversations ``where`` holds for, from ``cursor`` on."""
        ...

    def search(
        self, text: str, conversation_id: str | None = None, limit: int = 20
    ) -> list[SearchHit]:
        """The events whose text matches best, first."""
        ...

    def ledger(
        self,
        conversation_id: str,
        since: datetime | None = None,
        until: datetime | None = None,
    ) -> Ledger:
        """Every assistant turn's usage in the conversation, and their sums."""
        ...

    def ledger_totals(
        self,
        since: datetime | None = None,
        limit: int | None = None,
        until: datetime | None = None,
    ) -> list[LedgerTotals]:
        """Each conversation's sums over its assistant turns."""
        ...

    def unpriced_models(
        self, since: datetime | None = None, until: datetime | None = None
    ) -> list[str]:
        """``provider/model`` of the turns with no recorded cost."""
        ...

    def usage_by_period(
        self,
        since: datetime | None = None,
        until: datetime | None = None,
        period: str = "day",
    ) -> list[UsagePeriod]:
        """Tokens and cost summed per period of every conversation, oldest first."""
        ...

    def dead_letters(
        self,
        conversation_id: str | None = None,
        limit: int = 100,
        before: tuple[int, int] | None = None,
    ) -> list[DeadLetterRow]:
        """Dead letters, newest first (before the ``(partition, offset)`` given)."""
        ...

    def replies_of(self, conversation_id: str) -> list[ReplyRow]:
        """The conversation's replies in log order."""
        ...

    def stored_snapshots(
        self, conversation_ids: Sequence[str] = ()
    ) -> dict[str, ConversationSnapshot]:
        """The stored snapshot of each conversation named (all of them when none is)."""
        ...

    def snapshot_count(self) -> int:
        """How many conversations have a stored snapshot."""
        ...

    def refold(
        self,
        conversation_id: str,
        partition: int,
        until_offset: int,
        policy: FoldPolicy | PolicyTimeline = DEFAULT_POLICY,
    ) -> ConversationSnapshot | None:
        """The fold of the stored events up to ``until_offset`` (the as-of view)."""
        ...

    def verify(
        self,
        events_topic: str,
        conversation_ids: Sequence[str] = (),
        progress: Callable[[], None] = lambda: None,
    ) -> VerifyReport:
        """Every stored snapshot (or those named) against the fold of the stored events."""
        ...
