"""The chat turns running in this process, and the callers following their streams.

A turn registers here when it starts (:meth:`ReplyStreams.start`) and reports its
progress as it runs; a caller follows a request id before its request is sent (or while
its turn runs: a retry joins the running stream from its first item) and gets every item
of the run, then the request's ``ChatReply``. A reply that comes without a run (a
request answered before, a failure before the turn started) ends the following too.
Nothing here waits on a follower: a slow or gone caller never holds a turn back, and
only :meth:`ReplyStreams.cancel` stops one.
"""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field

from goaicore.conversation.progress import TurnProgress
from goaicore.records import ChatReply, new_id


@dataclass(frozen=True, slots=True)
class Restarted:
    """The turn runs again from the start (its worker stopped mid-turn and another took
    it over): the text shown so far is void, and the new run's follows."""

    run_id: str


StreamedReply = TurnProgress | Restarted | ChatReply
"""What a streamed ask yields: progress (maybe a restart), then the ``ChatReply``."""

CANCELS_KEPT = 1024
"""Cancels of requests whose turn has not started here, remembered for when it does."""


@dataclass
class Run:
    """One run of a request's turn: its id, its progress so far, its cancel switch."""

    request_id: str
    run_id: str = ""
    items: list[TurnProgress | Restarted] = field(default_factory=list)
    followers: list[asyncio.Queue[StreamedReply]] = field(default_factory=list)
    cancel: asyncio.Event = field(default_factory=asyncio.Event)
    sinks: list[Callable[[TurnProgress], None]] = field(default_factory=list)

    @property
    def started(self) -> bool:
        return bool(self.run_id)

    def report(self, item: TurnProgress) -> None:
        """One item of the turn's progress: to every follower and sink, and kept for
        followers who join later."""
        self.items.append(item)
        self.send(item)
        for sink in self.sinks:
            sink(item)

    def send(self, item: StreamedReply) -> None:
        for queue in self.followers:
            queue.put_nowait(item)


class ReplyStreams:
    """Runs by request id (see the module docstring)."""

    def __init__(self) -> None:
        self._runs: dict[str, Run] = {}
        self._cancelled: OrderedDict[str, None] = OrderedDict()

    def running(self, request_id: str) -> bool:
        """A turn of the request runs here now."""
        run = self._runs.get(request_id)
        return run is not None and run.started

    def start(self, request_id: str, run_id: str | None = None) -> Run:
        """A run of the request begins here; followers of an earlier one are told."""
        run_id = run_id or new_id()
        run = self._runs.setdefault(request_id, Run(request_id))
        if run.started:
            run.items = [Restarted(run_id)]
            run.send(run.items[0])
            run.cancel = asyncio.Event()
        run.run_id = run_id
        if self._cancelled.pop(request_id, 0) is None:  # cancelled before it started
            run.cancel.set()
        return run

    def cancel(self, request_id: str) -> bool:
        """Stop the request's turn (it ends with what it generated so far): now if it runs
        here (True), else as soon as it starts here (False)."""
        run = self._runs.get(request_id)
        if run is None or not run.started:
            self._cancelled[request_id] = None
            while len(self._cancelled) > CANCELS_KEPT:
                self._cancelled.popitem(last=False)
            return False
        run.cancel.set()
        return True

    def finish(self, reply: ChatReply) -> None:
        """The request is answered: its followers get the reply and stop."""
        run = self._runs.pop(reply.request_id, None)
        if run is not None:
            run.send(reply)

    def forget(self, run: Run) -> None:
        """The run is over here, answered (its followers had the reply) or given up (they
        wait no more here: the request's retry is answered by whoever runs it)."""
        if self._runs.get(run.request_id) is run:
            del self._runs[run.request_id]

    def follow(self, request_id: str) -> Following:
        """Every item of the request's run (those so far first), then its reply;
        following starts now, so call it before the request is sent."""
        run = self._runs.setdefault(request_id, Run(request_id))
        following = Following(self, run)
        for item in run.items:
            following.queue.put_nowait(item)
        run.followers.append(following.queue)
        return following

    def unfollow(self, following: Following) -> None:
        run = following.run
        if following.queue in run.followers:
            run.followers.remove(following.queue)
        if not run.followers and not run.started and self._runs.get(run.request_id) is run:
            del self._runs[run.request_id]  # nobody runs it, nobody follows it


class Following:
    """One caller's view of a request's stream: iterate it (it ends after the reply), or
    ``close`` it to stop following (the turn goes on)."""

    def __init__(self, streams: ReplyStreams, run: Run) -> None:
        self.streams = streams
        self.run = run
        self.queue: asyncio.Queue[StreamedReply] = asyncio.Queue()

    async def __aiter__(self) -> AsyncIterator[StreamedReply]:
        try:
            while True:
                item = await self.queue.get()
                yield item
                if isinstance(item, ChatReply):
                    return
        finally:
            self.close()

    def close(self) -> None:
        self.streams.unfollow(self)
