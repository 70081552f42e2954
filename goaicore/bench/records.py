"""Benchmarks of the Avro codec: records/s for a ~300-byte event and a 50-message snapshot."""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import UTC, datetime

from goaicore.bench.registry import Measurement, suite
from goaicore.records import (
    ConversationEvent,
    ConversationSnapshot,
    GameEvent,
    LogPosition,
    SnapshotMessage,
    ToolCall,
    new_event,
)
from goaicore.records.avro import decode_event, decode_snapshot, encode_event, encode_snapshot

_SECONDS_PER_FIGURE = 1.0


def _rate(fn: Callable[[], object]) -> float:
    """Calls per second of ``fn``, timed over batches until about a second has passed."""
    fn()  # warm up (first use parses the schemas)
    calls, batch, elapsed = 0, 100, 0.0
    while elapsed < _SECONDS_PER_FIGURE:
        started = time.perf_counter()
        for _ in range(batch):
            fn()
        elapsed += time.perf_counter() - started
        calls += batch
        batch = min(batch * 2, 20_000)
    return calls / elapsed


def _event_of_about(size: int) -> tuple[ConversationEvent, bytes]:
    base = new_event(
        "player-000042",
        GameEvent(kind="check-in", text="", attributes={"venue_id": "hgt-theatre"}),
        source="game:harrogate",
    )
    padding = size - len(encode_event(base))
    event = new_event(
        "player-000042",
        GameEvent(
            kind="check-in",
            text=("The player checked in at Harrogate Theatre. " * 10)[:padding],
            attributes={"venue_id": "hgt-theatre"},
        ),
        source="game:harrogate",
    )
    return event, encode_event(event)


def _snapshot(messages: int) -> ConversationSnapshot:
    history = []
    for n in range(messages):
        if n % 3 == 0:
            history.append(
                SnapshotMessage(
                    role="user", text=f"Question {n}: where next?", event_id=f"{n:032x}"
                )
            )
        elif n % 3 == 1:
            history.append(
                SnapshotMessage(
                    role="assistant",
                    tool_calls=(ToolCall(id=f"call_{n}", name="lookup", arguments='{"q": "x"}'),),
                    raw_json='{"role":"assistant","content":null,"tool_calls":[...]}' * 2,
                    provider="openai",
                    event_id=f"{n:032x}",
                )
            )
        else:
            history.append(
                SnapshotMessage(
                    role="tool",
                    text='{"venue": "Harrogate Theatre", "open": true}',
                    tool_call_id=f"call_{n - 1}",
                    name="lookup",
                    event_id=f"{n:032x}",
                )
            )
    return ConversationSnapshot(
        conversation_id="player-000042",
        messages=tuple(history),
        summary="The player explored Harrogate.",
        last_position=LogPosition(partition=3, offset=123_456),
        recent_event_ids=tuple(f"{n:032x}" for n in range(64)),
        event_count=messages,
        events_by_type={"UserMessage": messages // 3, "AssistantTurn": messages // 3},
        message_count=messages,
        prompt_tokens=120_000,
        completion_tokens=4_000,
        updated_at=datetime(2025, 3, 14, tzinfo=UTC),
    )


@suite("records")
def records() -> list[Measurement]:
    event, event_bytes = _event_of_about(300)
    snapshot = _snapshot(50)
    snapshot_bytes = encode_snapshot(snapshot)
    if decode_event(event_bytes) != event or decode_snapshot(snapshot_bytes) != snapshot:
        raise RuntimeError("the records measured do not round-trip: the figures would be wrong")
    event_params = {"bytes": len(event_bytes)}
    snapshot_params = {"messages": 50, "bytes": len(snapshot_bytes)}
    return [
        Measurement(
            "records",
            "encode event",
            _rate(lambda: encode_event(event)),
            "records/s",
            event_params,
            "schema check + single-object write",
        ),
        Measurement(
            "records",
            "decode event",
            _rate(lambda: decode_event(event_bytes)),
            "records/s",
            event_params,
        ),
        Measurement(
            "records",
            "encode snapshot",
            _rate(lambda: encode_snapshot(snapshot)),
            "records/s",
            snapshot_params,
            "schema check + single-object write",
        ),
        Measurement(
            "records",
            "decode snapshot",
            _rate(lambda: decode_snapshot(snapshot_bytes)),
            "records/s",
            snapshot_params,
        ),
    ]
