"""Where an answered turn ended in the log, so that a read after an ask sees the turn.

A worker appends a turn's events, then publishes its reply: a caller can have the
reply before the conversation's snapshot has folded the turn. So the reply's record
names the turn's last event in ``events`` (:data:`TURN_END_HEADER`: partition and
offset), the backend that took the reply remembers it (:class:`TurnEnds`), and the
store's next read of the conversation waits for a snapshot that has applied it, as it
does for the caller's own appends. A reply that appended nothing (refused), or one sent
again for a request answered before, names nothing: there is nothing new to wait for.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterable

from goaicore.records import TopicPosition

TURN_END_HEADER = "goaicore-turn-end"
"""The header of a ``replies`` record that names its turn's last event in ``events``."""

TURN_ENDS_KEPT = 1024
"""Turn ends a backend remembers for asks that have not taken theirs yet (an ask that
timed out never does; the oldest go first)."""


def turn_end_header(position: TopicPosition) -> tuple[str, bytes]:
    """The header naming ``position``, the turn's last event, as ``partition:offset``."""
    return TURN_END_HEADER, f"{position.partition}:{position.offset}".encode()


def turn_end_of(
    headers: Iterable[tuple[str, bytes | None]] | None, events_topic: str
) -> TopicPosition | None:
    """The turn end a record's ``headers`` name (in ``events_topic``); None when none
    does, or its value is not a partition and an offset (a foreign producer's record)."""
    for name, value in headers or ():
        if name != TURN_END_HEADER or value is None:
            continue
        partition, _, offset = value.decode("ascii", errors="replace").partition(":")
        if not (_number(partition) and _number(offset)):
            return None
        return TopicPosition(topic=events_topic, partition=int(partition), offset=int(offset))
    return None


def _number(text: str) -> bool:
    """A non-negative decimal that fits a Kafka offset (a signed long)."""
    return text.isascii() and text.isdigit() and len(text) <= 19 and int(text) < 2**63


class TurnEnds:
    """Turn ends by request, each taken once by the ask it answers (the newest
    TURN_ENDS_KEPT kept)."""

    def __init__(self) -> None:
        self._ends: OrderedDict[tuple[str, str], TopicPosition] = OrderedDict()

    def put(self, conversation_id: str, request_id: str, position: TopicPosition) -> None:
        key = (conversation_id, request_id)
        self._ends[key] = position
        self._ends.move_to_end(key)
        while len(self._ends) > TURN_ENDS_KEPT:
            self._ends.popitem(last=False)

    def take(self, conversation_id: str, request_id: str) -> TopicPosition | None:
        """The request's turn end, forgotten here (None: none known)."""
        return self._ends.pop((conversation_id, request_id), None)

    def __len__(self) -> int:
        return len(self._ends)
