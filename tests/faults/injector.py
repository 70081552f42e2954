"""A seeded mix of good and bad input for real worker and projector processes.

Each operation is drawn from the seed alone, so a failing run is repeated
exactly with the same ``GOAICORE_FAULT_SEED``. The injector keeps the books:
what it sent where, what must be folded, what must become a dead letter and
why, which chat requests await a reply.
"""

from __future__ import annotations

import random
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from kafka import KafkaProducer

from goaicore.clients import EventPublisher
from goaicore.config import Settings
from goaicore.records import GameEvent, UserMessage, new_chat_request, new_event
from goaicore.records.avro.api import encode_event
from goaicore.records.validation import InvalidInputError
from tests.chat_agent.helpers import Replies

CONVERSATIONS = [f"f{n}" for n in range(8)]
KINDS = {
    "game-event": 30,
    "user-message": 8,
    "large-event": 6,
    "over-limit-event": 2,
    "undecodable": 5,
    "truncated": 3,
    "unknown-fingerprint": 3,
    "wrong-key": 4,
    "duplicate-id": 5,
    "chat": 10,
    "chat-with-tool": 4,
    "huge-tool-result": 2,
}


@dataclass
class Books:
    """What was injected, by category, and what each record must become."""

    counts: Counter[str] = field(default_factory=Counter)
    valid: dict[str, list[tuple[int, int, str]]] = field(default_factory=dict)
    """conversation -> (partition, offset, event id) of every valid event sent."""
    dead: dict[tuple[int, int], str] = field(default_factory=dict)
    """(partition, offset) of each invalid record -> the dead-letter reasons it may get."""
    requests: list[str] = field(default_factory=list)
    refused_by_client: int = 0


class Injector:
    """Sends one drawn operation at a time through the real clients and a raw producer."""

    def __init__(self, settings: Settings, seed: int, replies: Replies) -> None:
        self.settings = settings
        self.rng = random.Random(seed)
        self.replies = replies
        self.books = Books()
        self.events_topic = settings.topic("events")
        self.publisher = EventPublisher(settings, source="faults")
        self.raw = KafkaProducer(
            bootstrap_servers=settings.require_bootstrap(),
            max_request_size=settings.max_record_bytes + 32 * 1024,
            acks="all",
        )

    def close(self) -> None:
        self.publisher.close()
        self.raw.close()

    def step(self) -> str:
        """Inject one operation; its category."""
        kinds, weights = zip(*KINDS.items(), strict=True)
        kind: str = self.rng.choices(kinds, weights)[0]
        conversation = self.rng.choice(CONVERSATIONS)
        getattr(self, "_" + kind.replace("-", "_"))(conversation)
        self.books.counts[kind] += 1
        return kind

    # ---- valid events -------------------------------------------------------------

    def _valid(self, conversation: str, event: Any) -> None:
        position = self.publisher.publish(conversation, event)
        event_id = event.event_id if hasattr(event, "event_id") else ""
        self.books.valid.setdefault(conversation, []).append(
            (position.partition, position.offset, event_id)
        )

    def _game_event(self, conversation: str) -> None:
        text = f"the player did thing {self.rng.randrange(10**6)}"
        self._valid(conversation, new_event(conversation, GameEvent(kind="world", text=text)))

    def _user_message(self, conversation: str) -> None:
        text = f"player says {self.rng.randrange(10**6)}"
        self._valid(conversation, new_event(conversation, UserMessage(text=text)))

    def _large_event(self, conversation: str) -> None:
        size = self.rng.randrange(100_000, 600_000)
        body = GameEvent(kind="map", text="m" * size)
        self._valid(conversation, new_event(conversation, body))

    def _duplicate_id(self, conversation: str) -> None:
        event = new_event(conversation, GameEvent(kind="world", text="sent twice"))
        self._valid(conversation, event)
        self._valid(conversation, event)  # the same event id again: a duplicate, not a new fact

    def _over_limit_event(self, conversation: str) -> None:
        body = GameEvent(kind="map", text="m" * (self.settings.max_record_bytes + 1000))
        try:
            self.publisher.publish(conversation, body)
        except InvalidInputError:
            self.books.refused_by_client += 1
            return
        raise AssertionError("an event over the record limit was sent")

    # ---- invalid records ---------------------------------------------------------

    def _raw(self, key: bytes, value: bytes, reason: str) -> None:
        sent = self.raw.send(self.events_topic, key=key, value=value).get(30)
        self.books.dead[(sent.partition, sent.offset)] = reason

    def _undecodable(self, conversation: str) -> None:
        size = self.rng.choice([1, 50, 5000, self.settings.max_record_bytes + 20_000])
        value = bytes([0]) + self.rng.randbytes(size)
        # Over the record limit, the fold sets it aside for its size before decoding it.
        reason = "too-large" if len(value) > self.settings.max_record_bytes else "bad-magic"
        self._raw(conversation.encode(), value, reason)

    def _truncated(self, conversation: str) -> None:
        whole = encode_event(new_event(conversation, UserMessage(text="cut short " * 20)))
        self._raw(
            conversation.encode(), whole[: self.rng.randrange(12, len(whole) - 1)], "truncated"
        )

    def _unknown_fingerprint(self, conversation: str) -> None:
        value = b"\xc3\x01" + self.rng.randbytes(8) + self.rng.randbytes(40)
        self._raw(conversation.encode(), value, "unknown-fingerprint")

    def _wrong_key(self, conversation: str) -> None:
        other = self.rng.choice([c for c in CONVERSATIONS if c != conversation])
        event = new_event(conversation, UserMessage(text="under another key"))
        self._raw(other.encode(), encode_event(event), "key-mismatch")

    # ---- chat ---------------------------------------------------------------------

    def _chat(self, conversation: str) -> None:
        request = new_chat_request(conversation, f"question {self.rng.randrange(10**6)}")
        self.books.requests.append(self.replies.send(request))

    def _chat_with_tool(self, conversation: str) -> None:
        team = self.rng.choice(["Leeds", "York", "Nowhere"])
        text = f'call score_lookup {{"team": "{team}"}}'
        request = new_chat_request(conversation, text, tools=["score_lookup"])
        self.books.requests.append(self.replies.send(request))

    def _huge_tool_result(self, conversation: str) -> None:
        size = self.rng.randrange(1_000_000, 3_000_000)
        request = new_chat_request(
            conversation, f'call big_result {{"size": {size}}}', tools=["big_result"]
        )
        self.books.requests.append(self.replies.send(request))
