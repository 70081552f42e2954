"""The auditor's queries over the PostgreSQL projection (psycopg 3).

The projector (``goaicore projector``) writes the tables; these read them:
a conversation's history by type and time, the list of conversations, full-text
search, the token and cost ledger, and the check of every stored snapshot
against the fold of the stored events. Importing ``goaicore`` never loads this.
"""

from goaicore.extras import needs

with needs("postgres"):
    from goaicore.projection.conversations import ConversationSummary, conversations
    from goaicore.projection.db import ProjectionMissingError, connect, require_projection
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
    from goaicore.projection.search import SearchHit, search
    from goaicore.projection.verify import verify_db
    from goaicore.replay.verify import VerifyReport

__all__ = [
    "BODY_TYPES",
    "LATEST_VERSION",
    "MIGRATIONS",
    "ConversationSummary",
    "Ledger",
    "LedgerEntry",
    "LedgerTotals",
    "ProjectionMissingError",
    "SearchHit",
    "StoredEvent",
    "VerifyReport",
    "connect",
    "conversations",
    "history",
    "ledger",
    "ledger_totals",
    "migrate",
    "require_projection",
    "search",
    "unpriced_models",
    "verify_db",
]
