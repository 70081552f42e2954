"""The store worker's parts, built once by :func:`goaicore_store.app.create_app`.

The agents and the views receive a :class:`StoreApp` and import only this
module, so the worker's modules import one way: ``app`` builds, the rest use.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from functools import cached_property
from typing import IO, Any

import faust
from faust.types import TopicT

from goaicore.conversation.providers.choice import Providers
from goaicore.conversation.tools import Tool
from goaicore.fold.policy import FoldPolicy, policy_for_record_limit
from goaicore.kafka.dead_letters import DeadLetter
from goaicore.kafka.faust.durable_table import DurableTable
from goaicore.kafka.faust.write_cache import WriteCache
from goaicore.kafka.high_watermarks import HighWatermarks
from goaicore.logs import origin
from goaicore.settings import Settings
from goaicore.store.limits import OutputLimits
from goaicore.store.read_your_writes import FoldProgress
from goaicore.store.reply_streams import ReplyStreams
from goaicore.store.turns import TurnSettings
from goaicore_store.keys import ConversationKeys
from goaicore_store.metrics import StoreMetrics

log = logging.getLogger(__name__)


@dataclass
class ChatServices:
    """What the chat agent uses besides the Faust app: LLM, tools, turn limits, watermarks."""

    providers: Providers
    registry: dict[str, Tool]
    turn: TurnSettings
    watermarks: HighWatermarks
    intake_watermarks: HighWatermarks | None  # None: this worker does not seal intake
    streams: ReplyStreams
    """The turns running here: HTTP callers follow them, cancels reach them."""
    concurrency: int
    read_wait: float
    limits: OutputLimits


@dataclass
class StoreApp:
    """The Faust app with its topics, its three tables and the chat agent's services."""

    app: faust.App
    settings: Settings
    events: TopicT
    intake: TopicT
    snapshots: TopicT
    dead_letters: TopicT
    requests: TopicT
    replies: TopicT
    reply_stream: TopicT
    table: DurableTable  # bytes -> ConversationSnapshot; its changelog is the snapshots topic
    snapshot_writes: WriteCache  # when the table's staged snapshots reach its changelog
    replies_table: DurableTable  # bytes -> RecentReplies; a reply is published once stored
    keys: ConversationKeys  # its table's changelog is the keys topic
    chat: ChatServices
    web_port: int
    metrics: StoreMetrics
    progress: FoldProgress = field(default_factory=FoldProgress)
    """How far the fold has applied each partition: the chat agent's read-your-writes wait."""
    intake_progress: FoldProgress = field(default_factory=FoldProgress)
    """How far each ``intake`` partition is sealed into ``events``: the same wait's first half."""
    table_lock: IO[str] | None = None
    """Held while the worker runs when its tables are on disk (``disk_table``)."""

    @cached_property
    def fold_policy(self) -> FoldPolicy:
        """The fold's bounds: every snapshot fits under the configured record limit."""
        return policy_for_record_limit(self.settings.max_record_bytes)

    @property
    def web_url(self) -> str:
        return f"http://127.0.0.1:{self.web_port}"

    async def dead_letter(self, message: Any, reason: str, detail: str, force: bool = True) -> None:
        """Set ``message`` aside on the dead-letter topic with the reason, and go on.

        A record too large to send again with the reason beside it keeps a prefix
        (see :class:`goaicore.clients.DeadLetter`).
        """
        letter = DeadLetter.of(
            message, reason, detail, app_id(self.settings), self.settings.max_record_bytes
        )
        self.metrics.dead_letters.labels(reason).inc()
        log.warning(
            "dead letter from %s[%d]@%d: %s",
            message.topic,
            message.partition,
            message.offset,
            reason,
            extra=origin(message),
        )
        await self.dead_letters.send(
            key=letter.key, value=letter.value, headers=letter.headers(), force=force
        )


def app_id(settings: Settings) -> str:
    """The consumer group and Faust app id; one per topic prefix."""
    return f"{settings.topic_prefix}.store"
