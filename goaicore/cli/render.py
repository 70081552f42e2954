"""What the CLI prints: one-line descriptions of records, and verify reports."""

from __future__ import annotations

from typing import TYPE_CHECKING

from goaicore.cli.output import print_json
from goaicore.records import (
    ChatReply,
    ChatRequest,
    ConversationEvent,
    ConversationKey,
    ConversationSnapshot,
    ReplyChunk,
)
from goaicore.records.event_types import clip, summary
from goaicore.records.types import Record

if TYPE_CHECKING:
    from goaicore.replay.verify import VerifyReport

__all__ = ["clip", "describe", "describe_event", "print_report"]


def describe_event(event: ConversationEvent) -> str:
    """One line; a sealed event not opened here (read raw, or its key gone) says so."""
    when = event.occurred_at.isoformat(timespec="seconds")
    sealed = f"  (sealed under key {event.sealed.key_id})" if event.sealed is not None else ""
    return f"{when} {event.conversation_id} {summary(event.body)}{sealed}"


def describe(record: Record) -> str:
    """Any of our records on one line."""
    match record:
        case ConversationEvent():
            return describe_event(record)
        case ChatRequest(request_id=rid, conversation_id=conv, cancel=True):
            return f"cancel of request {rid} {conv}"
        case ChatRequest(request_id=rid, conversation_id=conv, text=text):
            return f"request {rid} {conv}: {clip(text)}"
        case ChatReply(request_id=rid, conversation_id=conv, status=status, text=text, error=err):
            return f"reply {rid} {conv} {status.value}: {clip(text or err or '')}"
        case ConversationSnapshot(conversation_id=conv, messages=messages):
            return f"snapshot {conv}: {len(messages)} messages"
        case ConversationKey(conversation_id=conv, key_id=key_id, master_key_id=master):
            return f"key {conv}: data key {key_id} wrapped under master key {master}"
        case ReplyChunk(request_id=rid, conversation_id=conv, run_id=run, seq=seq, kind=kind):
            return f"chunk {rid} {conv} run {run} #{seq} {kind.value}{_chunk_detail(record)}"
    return type(record).__name__


def _chunk_detail(chunk: ReplyChunk) -> str:
    """What a reply chunk holds, after its kind: a tool's name, an error, the text."""
    tool = f" {chunk.tool_name}" if chunk.tool_name is not None else ""
    error = " (error)" if chunk.is_error else ""
    shown = chunk.arguments if chunk.arguments is not None else chunk.text
    return f"{tool}{error}: {clip(shown)}" if shown else f"{tool}{error}"


def print_report(report: VerifyReport, *, against_db: bool = False, as_json: bool = False) -> int:
    """Print a verify report, one line a finding (or as JSON), and return the exit status
    (1: different, or content unreadable without an erasure)."""
    if as_json:
        print_json(
            {
                "against": "database" if against_db else "log",
                "checked": report.checked,
                "equal": report.equal,
                "different": sorted(report.different),
                "differences": report.differences,
                "pending": report.pending,
                "unknown": report.unknown,
                "unreadable": report.unreadable,
            }
        )
        return 1 if report.differences or report.unreadable else 0
    replayed = "refolded" if against_db else "replayed"
    for diff in report.differences:
        print(
            f"DIFFERENT {diff.conversation_id} {diff.field}: stored {clip(repr(diff.stored), 100)}"
            f" {replayed} {clip(repr(diff.replayed), 100)}"
        )
    for conversation_id in report.pending:
        print(f"PENDING {conversation_id}: its snapshot is ahead of the projected events")
    missing = "no events of it are stored" if against_db else "the log has no events of it"
    for conversation_id in report.unknown:
        print(f"NO EVENTS {conversation_id}: {missing}, so no snapshot to verify")
    for conversation_id, offsets in report.unreadable.items():
        print(
            f"UNREADABLE {conversation_id}: {len(offsets)} sealed events (from offset "
            f"{offsets[0]}) do not open and no erasure covers them: their data key is missing "
            "without an erasure, or GOAICORE_MASTER_KEYS lacks the master key it was wrapped in"
        )
    checked = (
        f"{report.checked} stored snapshots against the stored events"
        if against_db
        else f"{report.checked} snapshots"
    )
    pending = f", {len(report.pending)} pending" if against_db else ""
    unknown = f", {len(report.unknown)} without events" if report.unknown else ""
    unreadable = f", {len(report.unreadable)} unreadable" if report.unreadable else ""
    print(
        f"verified {checked}: {report.equal} equal, {len(report.different)} different"
        f"{pending}{unknown}{unreadable}"
    )
    return 1 if report.differences or report.unreadable else 0
