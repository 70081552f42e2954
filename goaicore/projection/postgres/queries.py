"""The query port answered by the PostgreSQL projection: :class:`PostgresQueries` over one
connection, each question the SQL of its module beside this one."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime

from goaicore.errors import raises_ours
from goaicore.fold.policy import DEFAULT_POLICY, FoldPolicy, PolicyTimeline
from goaicore.projection.db import Connection, connect, require_projection
from goaicore.projection.postgres import (
    conversations,
    dead_letters,
    events,
    ledger,
    replies,
    search,
    verify,
)
from goaicore.projection.queries import (
    EVERY_CONVERSATION,
    ConversationFilter,
    ConversationPage,
    ConversationSummary,
    EventPoint,
    Ledger,
    LedgerTotals,
    SearchHit,
    StoredEvent,
    UsagePeriod,
)
from goaicore.projection.rows import DeadLetterRow, ReplyRow
from goaicore.records import ConversationSnapshot
from goaicore.replay.verify import VerifyReport
from goaicore.settings import Settings


class PostgresQueries:
    """A :class:`~goaicore.projection.queries.ProjectionQueries` over ``conn`` (a connection
    to the projection's schema; the caller closes it)."""

    def __init__(self, conn: Connection) -> None:
        self.conn = conn

    def history(
        self,
        conversation_id: str,
        types: Sequence[str] = (),
        since: datetime | None = None,
        until: datetime | None = None,
        limit: int | None = None,
    ) -> list[StoredEvent]:
        return events.history(self.conn, conversation_id, types, since, until, limit)

    @raises_ours
    def event_points(self, conversation_id: str) -> list[EventPoint]:
        rows = self.conn.execute(
            "SELECT topic_partition, log_offset, body_type, occurred_at FROM conversation_events"
            " WHERE conversation_id = %s ORDER BY topic_partition, log_offset",
            (conversation_id,),
        )
        return [EventPoint(int(p), int(o), str(t), at) for p, o, t, at in rows]

    def conversations(
        self,
        since: datetime | None = None,
        limit: int | None = None,
        where: ConversationFilter = EVERY_CONVERSATION,
    ) -> list[ConversationSummary]:
        return conversations.conversations(self.conn, since, limit, where)

    def conversation_page(
        self,
        where: ConversationFilter = EVERY_CONVERSATION,
        limit: int = 50,
        cursor: str | None = None,
    ) -> ConversationPage:
        return conversations.conversation_page(self.conn, where, limit, cursor)

    def search(
        self, text: str, conversation_id: str | None = None, limit: int = 20
    ) -> list[SearchHit]:
        return search.search(self.conn, text, conversation_id, limit)

    def ledger(
        self,
        conversation_id: str,
        since: datetime | None = None,
        until: datetime | None = None,
    ) -> Ledger:
        return ledger.ledger(self.conn, conversation_id, since, until)

    def ledger_totals(
        self,
        since: datetime | None = None,
        limit: int | None = None,
        until: datetime | None = None,
    ) -> list[LedgerTotals]:
        return ledger.ledger_totals(self.conn, since, limit, until)

    def unpriced_models(
        self, since: datetime | None = None, until: datetime | None = None
    ) -> list[str]:
        return ledger.unpriced_models(self.conn, since, until)

    def usage_by_period(
        self,
        since: datetime | None = None,
        until: datetime | None = None,
        period: str = "day",
    ) -> list[UsagePeriod]:
        return ledger.usage_by_period(self.conn, since, until, period)

    def dead_letters(
        self,
        conversation_id: str | None = None,
        limit: int = 100,
        before: tuple[int, int] | None = None,
    ) -> list[DeadLetterRow]:
        return dead_letters.dead_letters(self.conn, conversation_id, limit, before)

    def replies_of(self, conversation_id: str) -> list[ReplyRow]:
        return replies.replies_of(self.conn, conversation_id)

    def stored_snapshots(
        self, conversation_ids: Sequence[str] = ()
    ) -> dict[str, ConversationSnapshot]:
        return verify.stored_snapshots(self.conn, conversation_ids)

    @raises_ours
    def snapshot_count(self) -> int:
        row = self.conn.execute("SELECT count(*) FROM conversation_snapshots").fetchone()
        return int(row[0]) if row is not None else 0

    def refold(
        self,
        conversation_id: str,
        partition: int,
        until_offset: int,
        policy: FoldPolicy | PolicyTimeline = DEFAULT_POLICY,
    ) -> ConversationSnapshot | None:
        return verify.refold(self.conn, conversation_id, partition, until_offset, policy)

    def verify(
        self,
        events_topic: str,
        conversation_ids: Sequence[str] = (),
        progress: Callable[[], None] = lambda: None,
    ) -> VerifyReport:
        return verify.verify_db(self.conn, events_topic, conversation_ids, progress)


@contextmanager
def open_queries(settings: Settings) -> Iterator[PostgresQueries]:
    """The queries over a connection to ``settings``' projection schema, refused (one
    line, :class:`~goaicore.projection.db.ProjectionMissingError`) where it holds none;
    the connection closes with the block."""
    with connect(settings) as conn:
        require_projection(conn, settings.db_schema)
        yield PostgresQueries(conn)
