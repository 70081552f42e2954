"""Where a record landed in a topic (what appending returns, from every store), and an
event read back with its place in the log."""

from __future__ import annotations

from dataclasses import dataclass

from goaicore.records.types import ConversationEvent, LogPosition


@dataclass(frozen=True, order=True)
class TopicPosition:
    """Where a record landed: its topic, partition and offset."""

    topic: str
    partition: int
    offset: int

    def __str__(self) -> str:
        return f"{self.topic}[{self.partition}]@{self.offset}"

    @property
    def log_position(self) -> LogPosition:
        """The position within the topic, as snapshots record it."""
        return LogPosition(partition=self.partition, offset=self.offset)


@dataclass(frozen=True)
class LoggedEvent:
    """An event with the log position it was read from."""

    partition: int
    offset: int
    event: ConversationEvent

    @property
    def position(self) -> LogPosition:
        return LogPosition(partition=self.partition, offset=self.offset)
