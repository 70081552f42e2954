"""The auditor's queries over the PostgreSQL projection (psycopg 3).

The projector (``goaicore projector``) writes the tables; these read them:
a conversation's history by type and time, the list of conversations (whole, or
filtered in keyset pages), full-text search, the token and cost ledger, the
dead letters, the chat replies, and the check of every stored snapshot against
the fold of the stored events. Importing ``goaicore`` never loads this.
"""

from goaicore.extras import needs

with needs("postgres"):
    from goaicore.projection.conversations import (
        ConversationFilter,
        ConversationPage,
        ConversationSummary,
        conversation_page,
        conversations,
    )
    from goaicore.projection.db import ProjectionMissingError, connect, require_projection
    from goaicore.projection.dead_letters import dead_letters
    from goaicore.projection.events import BODY_TYPES, StoredEvent, history
    from goaicore.projection.ledger import (
        Ledger,
        LedgerEntry,
        LedgerTotals,
        ledger,
        ledger_totals,
        unpriced_models,
    )
    from goaicore.projection.migrations import LATEST_VERSION, MIGRATIONS, migrate
    from goaicore.projection.replies import replies_of
    from goaicore.projection.rows import DeadLetterRow, ReplyRow
    from goaicore.projection.search import SearchHit, search
    from goaicore.projection.verify import verify_db
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
    "ProjectionMissingError",
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
    "replies_of",
    "require_projection",
    "search",
    "unpriced_models",
    "verify_db",
]
