"""What the worker writes stays under the record limit, whatever the LLM or a tool returned.

A turn's events, its reply and the replies table's record are each one Kafka
record. The LLM's text and a tool's result are outside anyone's control, so
they are cut down (with a marker the model sees the next time it reads the
history, and a warning in the worker's log) rather than refused: a refused
record would lose the turn. Tool results are cut before the model sees them.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from goaicore.records import ChatReply, ConversationEvent
from goaicore.records.avro.fit import fit_event, fit_reply
from goaicore.sealing.records import sealed_room

log = logging.getLogger(__name__)

ENVELOPE_ROOM = 16 * 1024
"""Room a record keeps for what surrounds its largest text (ids, envelope, the marker)."""


@dataclass(frozen=True)
class OutputLimits:
    """The sizes of what one turn writes, derived from the record limit."""

    event_bytes: int
    """An event record, encoded."""
    tool_result_bytes: int
    """A tool result's text, so its event fits with room for its ids."""
    reply_bytes: int
    """A reply, encoded; the replies table stores replies base64 in JSON (4/3 larger)."""
    replies_table_bytes: int
    """One conversation's record of recent replies in the replies table."""
    sealed: bool = False
    """Events are sealed on their way out: each keeps room for its skeleton and seal."""

    @classmethod
    def for_record_limit(cls, record_limit: int, sealed: bool = False) -> OutputLimits:
        room = record_limit - ENVELOPE_ROOM
        return cls(
            event_bytes=record_limit,
            tool_result_bytes=room,
            reply_bytes=room * 3 // 4,
            replies_table_bytes=room,
            sealed=sealed,
        )

    def fit_events(self, events: list[ConversationEvent]) -> list[ConversationEvent]:
        """The turn's events, each cut down to the limit where needed (and logged)."""
        fitted = []
        for event in events:
            limit = self.event_bytes - (sealed_room(event) if self.sealed else 0)
            smaller, cut = fit_event(event, limit)
            if cut:
                log.warning(
                    "event %s (%s) was over the %d-byte record limit: cut %s",
                    event.event_id,
                    type(event.body).__name__,
                    limit,
                    ", ".join(cut),
                )
            fitted.append(smaller)
        return fitted

    def fit_reply(self, reply: ChatReply) -> ChatReply:
        """The reply, cut down where needed, so publishing and storing it both fit."""
        smaller, cut = fit_reply(reply, self.reply_bytes)
        if cut:
            log.warning(
                "reply to %s was over %d bytes: cut %s", reply.request_id, self.reply_bytes, cut
            )
        return smaller
