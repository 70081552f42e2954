"""The projection's tables, as ordered versioned migrations.

The schema is the audit store's contract: the projector writes it, the
queries of ``goaicore.projection`` read it. ``migrate`` applies the migrations a
schema lacks, each recorded in ``schema_migrations``, in one transaction under
an advisory lock: running it twice, or from two processes at once, applies
each migration exactly once. Released migrations are never edited; a change
is a new migration appended at the end.
"""

from __future__ import annotations

from dataclasses import dataclass

from psycopg import sql

from goaicore.projection.db import Connection, lock_key


@dataclass(frozen=True)
class Migration:
    version: int
    name: str
    statements: tuple[str, ...]


# An event row is unique by its log position (partition, offset): the table is
# the log. A re-published event (same event_id) is a second row at its own
# position, as in the log; the fold ignores it, and queries can tell by event_id.
_EVENTS = """
CREATE TABLE conversation_events (
    topic_partition integer NOT NULL,
    log_offset bigint NOT NULL,
    event_id text NOT NULL,
    conversation_id text NOT NULL,
    body_type text NOT NULL,
    occurred_at timestamptz NOT NULL,
    source text NOT NULL,
    causation_id text,
    body jsonb NOT NULL,
    message_text text,
    avro bytea NOT NULL,
    search_vector tsvector GENERATED ALWAYS AS
        (to_tsvector('english'::regconfig, left(coalesce(message_text, ''), 100000))) STORED,
    projected_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (topic_partition, log_offset)
)
"""

_SNAPSHOTS = """
CREATE TABLE conversation_snapshots (
    conversation_id text PRIMARY KEY,
    snapshot jsonb NOT NULL,
    avro bytea NOT NULL,
    last_partition integer,
    last_offset bigint,
    event_count bigint NOT NULL,
    message_count bigint NOT NULL,
    prompt_tokens bigint NOT NULL,
    completion_tokens bigint NOT NULL,
    cost_usd_nanos bigint NOT NULL,
    deleted boolean NOT NULL,
    updated_at timestamptz,
    source_partition integer NOT NULL,
    source_offset bigint NOT NULL,
    projected_at timestamptz NOT NULL DEFAULT now()
)
"""

# One row per conversation, kept by the projector in the same transaction as
# the events: the conversation list reads this, never the events' content.
_CONVERSATIONS = """
CREATE TABLE conversations (
    conversation_id text PRIMARY KEY,
    topic_partition integer NOT NULL,
    event_count bigint NOT NULL,
    message_count bigint NOT NULL,
    first_occurred_at timestamptz NOT NULL,
    last_occurred_at timestamptz NOT NULL,
    last_offset bigint NOT NULL,
    projected_at timestamptz NOT NULL DEFAULT now()
)
"""

# The projector's own consumer positions: the next offset to read per topic
# partition, written in the same transaction as the rows (the truth, not Kafka
# group offsets).
_POSITIONS = """
CREATE TABLE projector_positions (
    topic text NOT NULL,
    topic_partition integer NOT NULL,
    next_offset bigint NOT NULL,
    updated_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (topic, topic_partition)
)
"""

# Counted from the events already projected; the projector keeps them from then on.
_BACKFILL_COUNTERS = """
UPDATE conversations c
SET failed_turns = e.failed_turns, compactions = e.compactions
FROM (
    SELECT conversation_id,
        count(*) FILTER (WHERE body_type = 'TurnFailed') AS failed_turns,
        count(*) FILTER (WHERE body_type = 'CompactionApplied') AS compactions
    FROM conversation_events
    WHERE body_type IN ('TurnFailed', 'CompactionApplied')
    GROUP BY conversation_id
) e
WHERE c.conversation_id = e.conversation_id
"""

# One row per record of the dead-letter topic, unique by its own log position;
# the origin columns say where the record set aside came from. Whatever a dead
# letter holds is stored (a dead letter is never set aside itself): an origin
# or a time the record does not give is NULL.
_DEAD_LETTERS = """
CREATE TABLE dead_letters (
    topic_partition integer NOT NULL,
    log_offset bigint NOT NULL,
    reason text NOT NULL,
    message text NOT NULL,
    origin_topic text NOT NULL,
    origin_partition integer,
    origin_offset bigint,
    consumer text NOT NULL,
    conversation_id text,
    dead_at timestamptz,
    key_bytes integer NOT NULL,
    value_bytes integer NOT NULL,
    truncated text NOT NULL,
    key bytea,
    value bytea,
    projected_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (topic_partition, log_offset)
)
"""

# One row per decodable record of the replies topic, unique by its log position.
_CHAT_REPLIES = """
CREATE TABLE chat_replies (
    topic_partition integer NOT NULL,
    log_offset bigint NOT NULL,
    request_id text NOT NULL,
    conversation_id text NOT NULL,
    status text NOT NULL,
    text text,
    error text,
    prompt_tokens bigint,
    completion_tokens bigint,
    llm_calls bigint,
    latency_ms bigint NOT NULL,
    published_at timestamptz,
    projected_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (topic_partition, log_offset)
)
"""

# Snapshots projected before these columns hold no metadata (schema v3 added it), so
# nothing is backfilled: the defaults are what their snapshots say.
_METADATA_COLUMNS = (
    "ALTER TABLE conversation_snapshots"
    " ADD COLUMN title text,"
    " ADD COLUMN owner text,"
    " ADD COLUMN tags text[] NOT NULL DEFAULT '{}',"
    " ADD COLUMN attributes jsonb NOT NULL DEFAULT '{}',"
    " ADD COLUMN forked_from text"
)

MIGRATIONS: tuple[Migration, ...] = (
    Migration(
        1,
        "events, snapshots, conversations, positions",
        (
            _EVENTS,
            "CREATE INDEX conversation_events_by_conversation"
            " ON conversation_events (conversation_id, topic_partition, log_offset)",
            "CREATE INDEX conversation_events_by_time"
            " ON conversation_events (conversation_id, occurred_at)",
            "CREATE INDEX conversation_events_by_event_id ON conversation_events (event_id)",
            "CREATE INDEX conversation_events_search"
            " ON conversation_events USING gin (search_vector)",
            _SNAPSHOTS,
            _CONVERSATIONS,
            "CREATE INDEX conversations_by_activity ON conversations (last_occurred_at DESC)",
            _POSITIONS,
        ),
    ),
    Migration(
        2,
        "conversation counters, dead letters, chat replies",
        (
            "ALTER TABLE conversations"
            " ADD COLUMN failed_turns bigint NOT NULL DEFAULT 0,"
            " ADD COLUMN compactions bigint NOT NULL DEFAULT 0",
            _BACKFILL_COUNTERS,
            # The list's order, whole, so a keyset page is one index range; it covers
            # what conversations_by_activity served.
            "CREATE INDEX conversations_by_activity_and_id"
            " ON conversations (last_occurred_at DESC, conversation_id)",
            "DROP INDEX conversations_by_activity",
            # Few conversations have failures or compactions: filtering on them reads
            # only those, in the list's order.
            "CREATE INDEX conversations_with_failures"
            " ON conversations (last_occurred_at DESC, conversation_id) WHERE failed_turns > 0",
            "CREATE INDEX conversations_with_compactions"
            " ON conversations (last_occurred_at DESC, conversation_id) WHERE compactions > 0",
            _DEAD_LETTERS,
            "CREATE INDEX dead_letters_by_conversation ON dead_letters"
            " (conversation_id, dead_at DESC NULLS LAST, topic_partition DESC, log_offset DESC)",
            "CREATE INDEX dead_letters_by_time ON dead_letters"
            " (dead_at DESC NULLS LAST, topic_partition DESC, log_offset DESC)",
            _CHAT_REPLIES,
            "CREATE INDEX chat_replies_by_conversation"
            " ON chat_replies (conversation_id, topic_partition, log_offset)",
            "CREATE INDEX chat_replies_by_request_id ON chat_replies (request_id)",
        ),
    ),
    Migration(
        3,
        "conversation metadata: title, owner, tags, attributes, fork origin",
        (
            _METADATA_COLUMNS,
            "CREATE INDEX conversation_snapshots_by_owner ON conversation_snapshots (owner)"
            " WHERE owner IS NOT NULL",
            "CREATE INDEX conversation_snapshots_by_tags"
            " ON conversation_snapshots USING gin (tags)",
        ),
    ),
)

LATEST_VERSION = MIGRATIONS[-1].version


def migrate(conn: Connection, schema: str) -> list[int]:
    """Apply the migrations ``schema`` lacks (creating it if missing); their versions."""
    applied: list[int] = []
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (lock_key(f"goaicore.migrate:{schema}"),))
        conn.execute(sql.SQL("CREATE SCHEMA IF NOT EXISTS {}").format(sql.Identifier(schema)))
        conn.execute(sql.SQL("SET LOCAL search_path TO {}").format(sql.Identifier(schema)))
        conn.execute(
            "CREATE TABLE IF NOT EXISTS schema_migrations ("
            "version integer PRIMARY KEY, name text NOT NULL, "
            "applied_at timestamptz NOT NULL DEFAULT now())"
        )
        done = {int(row[0]) for row in conn.execute("SELECT version FROM schema_migrations")}
        for migration in MIGRATIONS:
            if migration.version in done:
                continue
            for statement in migration.statements:
                conn.execute(statement)
            conn.execute(
                "INSERT INTO schema_migrations (version, name) VALUES (%s, %s)",
                (migration.version, migration.name),
            )
            applied.append(migration.version)
    return applied
