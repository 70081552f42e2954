"""ReplySubscriber: the sync facade over :class:`~goaicore.clients.aio.AsyncReplySubscriber`:
a reply consumer (a gateway, a bot) reads every chat reply."""

from __future__ import annotations

from collections.abc import Iterator

from goaicore.clients.aio.replies import AsyncReplySubscriber
from goaicore.records import ChatReply
from goaicore.settings import Settings
from goaicore.sync import Blocking, blocking_iter


class ReplySubscriber(Blocking[AsyncReplySubscriber]):
    """Iterate over chat replies as a member of consumer group ``group_id``.

    Members of one group share the partitions; each reply goes to one member.
    A reply's offset is committed when the next one is asked for, so a reply
    being handled when the process dies is delivered again (at least once).
    An undecodable record is skipped, counted (``skipped``) and logged with the
    reason, and iteration goes on; the projector writes its one dead letter.
    """

    def __init__(
        self,
        settings: Settings | None = None,
        group_id: str = "replies",
        from_beginning: bool = False,
    ) -> None:
        super().__init__(AsyncReplySubscriber(settings, group_id, from_beginning))
        self.settings = self._core.settings
        self.group_id = group_id

    @property
    def skipped(self) -> int:
        """Undecodable records skipped so far (the projector sets them aside)."""
        return self._core.skipped

    def __iter__(self) -> Iterator[ChatReply]:
        return self.replies()

    def replies(self, idle_timeout: float | None = None) -> Iterator[ChatReply]:
        """Replies as they come; stops after ``idle_timeout`` seconds without one."""
        return blocking_iter(self._core.replies(idle_timeout), owner=self)
