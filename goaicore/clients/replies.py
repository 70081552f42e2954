"""ReplySubscriber: a reply consumer (a gateway, a bot) reads every chat reply."""

from __future__ import annotations

import time
from collections.abc import Iterator

from goaicore.clients.deadletter import DeadLetterWriter
from goaicore.config import Settings
from goaicore.errors import client_errors
from goaicore.kafka.connection import make_consumer
from goaicore.lifecycle import Closing
from goaicore.records import ChatReply
from goaicore.records.avro.api import decode_chat_reply
from goaicore.records.avro.errors import DecodeError


class ReplySubscriber(Closing):
    """Iterate over chat replies as a member of consumer group ``group_id``.

    Members of one group share the partitions; each reply goes to one member.
    A reply's offset is committed when the next one is asked for, so a reply
    being handled when the process dies is delivered again (at least once).
    An undecodable record goes to the dead-letter topic with the reason, and
    iteration goes on.
    """

    def __init__(
        self,
        settings: Settings | None = None,
        group_id: str = "replies",
        from_beginning: bool = False,
    ) -> None:
        if not isinstance(group_id, str) or not group_id.strip():
            raise ValueError("group_id must be a non-empty string")
        self.settings = settings or Settings()
        self.group_id = group_id
        self.dead_letters = 0
        self._consumer = make_consumer(
            self.settings,
            group_id=group_id,
            auto_offset_reset="earliest" if from_beginning else "latest",
        )
        self._consumer.subscribe([self.settings.topic("replies")])
        self._dead = DeadLetterWriter(self.settings, consumer_name=f"replies:{group_id}")

    def __iter__(self) -> Iterator[ChatReply]:
        return self.replies()

    def replies(self, idle_timeout: float | None = None) -> Iterator[ChatReply]:
        """Replies as they come; stops after ``idle_timeout`` seconds without one."""
        last = time.monotonic()
        while True:
            with client_errors():
                batches = self._consumer.poll(timeout_ms=200)
            for records in batches.values():
                for record in records:
                    last = time.monotonic()
                    try:
                        reply = decode_chat_reply(record.value)
                    except DecodeError as err:
                        self._dead.forward(record, err.reason, err.message)
                        self.dead_letters += 1
                        continue
                    yield reply
            if batches:
                with client_errors():
                    self._consumer.commit()
            if idle_timeout is not None and time.monotonic() - last > idle_timeout:
                return

    def close(self) -> None:
        self._dead.close()
        self._consumer.close()
