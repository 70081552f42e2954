"""The auditor's queries over the PostgreSQL projection (psycopg 3).

The console and the auditor's commands ask them through the query port
(``queries``: :class:`ProjectionQueries`, opened with :func:`open_queries`); the SQL
is in ``postgres/``. The projector (``goaicore projector``) writes the tables; these
read them:
a conversation's history by type and time, the list of conversations (whole, or
filtered in keyset pages), full-text search, the token and cost ledger, the
dead letters, the chat replies, and the check of every stored snapshot against
the fold of the stored events. Importing ``goaicore`` never loads this.
"""

from goaicore.extras import needs

with needs("postgres"):
    from goaicore.projection.db import ProjectionMissingError, connect, require_projection
    from goaicore.projection.migrations import LATEST_VERSION, MIGRATIONS, migrate
    from goaicore.projection.postgres.conversations import conversation_page, conversations
    from goaicore.projection.postgres.dead_letters import dead_letters
    from goaicore.projection.postgres.events import history
    from goaicore.projection.postgres.ledger import ledger, ledger_totals, unpriced_models
    from goaicore.projection.postgres.queries import PostgresQueries, open_queries
    from goaicore.projection.postgres.replies import replies_of
    from goaicore.projection.postgres.search import search
    from goaicore.projection.postgres.verify import verify_db
    from goaicore.projection.queries import (
        BODY_TYPES,
        ConversationFilter,
        ConversationPage,
        ConversationSummary,
        Ledger,
        LedgerEntry,
        LedgerTotals,
        ProjectionQueries,
        SearchHit,
        StoredEvent,
    )
    from goaicore.projection.rows import DeadLetterRow, ReplyRow
    from goaicore.replay.verify import VerifyReport

__all__ = [
    "BODY_TYPES",
    "LATEST_VERSION",
    "MIGRATIONS",
    "ConversationFilter",
    "ConversationPage",
    "ConversationSummary",
    "DeadLetterRow",
    "Ledger",
    "LedgerEntry",
    "LedgerTotals",
    "PostgresQueries",
    "ProjectionMissingError",
    "ProjectionQueries",
    "ReplyRow",
    "SearchHit",
    "StoredEvent",
    "VerifyReport",
    "connect",
    "conversation_page",
    "conversations",
    "dead_letters",
    "history",
    "ledger",
    "ledger_totals",
    "migrate",
    "open_queries",
    "replies_of",
    "require_projection",
    "search",
    "unpriced_models",
    "verify_db",
]
