"""The store worker's settings: its chat turns and tools, their prices, its snapshots table."""

from __future__ import annotations

import re
from typing import Literal, get_args

from goaicore.errors import ConfigError
from goaicore.settings.declare import Setting, existing_file, one_of, seconds, text, whole_number

TableStore = Literal["memory", "rocksdb"]

TOOL_THREADS = 16
"""Threads of the synchronous tools' pool, unless set (GOAICORE_TOOL_THREADS)."""
HISTORY_THREADS = 4
"""Threads of a store's pool for history operations, unless set: a fold is CPU work, so
more threads than cores fold no faster."""

DEFAULT_SYSTEM_PROMPT = (
    "You are the assistant of a game. Context messages tell you what happened in the "
    "game; use the tools for facts you do not have. Answer briefly."
)


def _parse_import_path(name: str, raw: str) -> str:
    if not re.match(r"^[A-Za-z_][\w.]*:[A-Za-z_]\w*$", raw):
        raise ConfigError(f"{name}={raw!r}: expected package.module:attribute")
    return raw


CHAT: tuple[Setting, ...] = (
    Setting(
        "chat_concurrency",
        "GOAICORE_CHAT_CONCURRENCY",
        "`32`",
        "Chat requests one store worker runs at once; a conversation's requests always run "
        "one at a time, in arrival order.",
        whole_number(1, 10000),
        32,
    ),
    Setting(
        "tool_threads",
        "GOAICORE_TOOL_THREADS",
        "`16`",
        "Threads the store worker runs synchronous tools in: a pool of their own, so a tool "
        "never waits behind history operations or other blocking work.",
        whole_number(1, 1024),
        TOOL_THREADS,
    ),
    Setting(
        "history_threads",
        "GOAICORE_HISTORY_THREADS",
        "`4`",
        "Threads a store (the worker's, or one over Kafka) folds conversations in for "
        "history operations: a pool of their own, so many operations at once hold back "
        "only each other.",
        whole_number(1, 1024),
        HISTORY_THREADS,
    ),
    Setting(
        "read_wait",
        "GOAICORE_READ_WAIT",
        "`10`",
        "Seconds a chat request waits for its conversation's earlier events to be folded "
        "before it runs anyway, with a logged warning.",
        seconds(0, 3600),
        10.0,
    ),
    Setting(
        "turn_timeout",
        "GOAICORE_TURN_TIMEOUT",
        "`120`",
        "Seconds one chat turn (LLM and tool calls) may take; then its reply is a timeout.",
        seconds(0.001, 86400),
        120.0,
    ),
    Setting(
        "stream_hold_ms",
        "GOAICORE_STREAM_HOLD_MS",
        "`50`",
        "Milliseconds a streamed reply's text is held back to join the text after it on "
        "`reply-stream` (its first text leaves at once; 2048 characters waiting leave at "
        "once).",
        whole_number(0, 10000),
        50,
    ),
    Setting(
        "system_prompt",
        "GOAICORE_SYSTEM_PROMPT",
        "a short game-assistant prompt",
        "System prompt of chat requests that bring none (never stored in the log).",
        text,
        DEFAULT_SYSTEM_PROMPT,
    ),
    # Unset, the worker offers its own tools: the library never names a service's module.
    Setting(
        "tools",
        "GOAICORE_TOOLS",
        "the game demo's tools",
        "Tools the chat worker offers, as `package.module:attribute` (a list or dict of tools).",
        _parse_import_path,
    ),
    Setting(
        "context_tokens",
        "GOAICORE_CONTEXT_TOKENS",
        "`16000`",
        "Estimated request size above which the chat worker compacts a conversation's history.",
        whole_number(256, 10_000_000),
        16_000,
    ),
)
"""How the chat worker runs a turn."""

PRICES: tuple[Setting, ...] = (
    Setting(
        "prices",
        "GOAICORE_PRICES",
        "the `genai-prices` data shipped with the package",
        "JSON file of LLM prices (USD per million tokens, by provider and model) that "
        'overrides the shipped ones; see docs/operations.md, "Cost".',
        existing_file,
    ),
)
"""What the worker counts a turn's cost with."""

TABLE: tuple[Setting, ...] = (
    Setting(
        "table_store",
        "GOAICORE_TABLE_STORE",
        "`memory`",
        "Where a store worker keeps its snapshots table: `memory` (rebuilt from the "
        "changelog at each start) or `rocksdb` (on disk under `GOAICORE_DATA_DIR`, kept "
        "across restarts; needs the `rocksdb` extra). See docs/operations.md, "
        '"The snapshots table".',
        one_of(*get_args(TableStore)),
        "memory",
        passed=True,
    ),
    Setting(
        "snapshot_flush_ms",
        "GOAICORE_SNAPSHOT_FLUSH_MS",
        "`100`",
        "Milliseconds a store worker with a backlog may hold a conversation's latest "
        "snapshot before writing it to `snapshots`, so a conversation touched many times "
        "meanwhile is written once (`0`: every fetch's snapshots are written at once). "
        "A worker with no backlog writes at once.",
        whole_number(0, 60_000),
        100,
    ),
    Setting(
        "snapshot_flush_bytes",
        "GOAICORE_SNAPSHOT_FLUSH_BYTES",
        "`4194304` (4 MiB)",
        "Bytes of snapshots a store worker holds back (see `GOAICORE_SNAPSHOT_FLUSH_MS`) "
        "before it writes them all at once, whatever their age.",
        whole_number(0, 1 << 30),
        4 * 1024 * 1024,
    ),
)
"""Where the worker keeps its snapshots table, and how often it writes them."""
