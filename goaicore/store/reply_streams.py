"""The chat turns running in this process, and the callers following their streams.

A turn registers here when it starts (:meth:`ReplyStreams.start`) and reports its
progress as it runs; a caller follows a request before it is sent (or while its turn
runs: a retry joins the running stream from its first item) and gets every item of the
run, then the request's ``ChatReply``. A reply that comes without a run (a request
answered before, a failure before the turn started) ends the following too; a run
given up without a reply ends it with :class:`TurnAbandoned`. Nothing here waits on a
follower: a slow or gone caller never holds a turn back, and only
:meth:`ReplyStreams.cancel` stops one.

A request is named by its conversation and its id (two conversations may use the same
request id): a run, a cancel and a follower of one never touch another's.

A reply that is not final (a request whose deadline passed before its turn ran: its
retry runs it) answers only the request record it names (:data:`ANSWERS_HEADER`): a
follower that sent another record with the same request id (a retry sent before the
late one was handled) keeps waiting for its own.
"""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field

from goaicore.conversation.progress import TurnProgress
from goaicore.records import ChatReply, TopicPosition, new_id
from goaicore.store.errors import ReplyTimeout, timed_out
from goaicore.store.turn_ends import TurnEnds


@dataclass(frozen=True, slots=True)
class Restarted:
    """The turn runs again from the start (its worker stopped mid-turn and another took
    it over): the text shown so far is void, and the new run's follows."""

    run_id: str


StreamedReply = TurnProgress | Restarted | ChatReply
"""What a streamed ask yields: progress (maybe a restart), then the ``ChatReply``."""

RequestKey = tuple[str, str]
"""A request: its conversation id and its request id."""

ANSWERS_HEADER = "goaicore-answers"
"""The header of a ``replies`` record that is not the request's final reply: the request
record it answers (:func:`request_at`); only whoever sent that record takes it."""

CANCELS_KEPT = 1024
"""Cancels of requests whose turn has not started here, remembered for when it does."""


def request_at(partition: int, offset: int) -> str:
    """How a reply names the request record it answers (see :data:`ANSWERS_HEADER`)."""
    return f"{partition}:{offset}"


class TurnAbandoned(ReplyTimeout):
    """The worker gave the turn up without a reply (the broker failed it): the request's
    retry, with the same request id, is answered by whoever runs it next."""


@dataclass
class Run:
    """One run of a request's turn: its id, its progress so far, its cancel switch."""

    key: RequestKey
    run_id: str = ""
    items: list[TurnProgress | Restarted] = field(default_factory=list)
    followers: list[Following] = field(default_factory=list)
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

    def send(self, item: StreamedReply | Exception) -> None:
        for following in self.followers:
            following.queue.put_nowait(item)


class ReplyStreams:
    """Runs by request (see the module docstring)."""

    def __init__(self) -> None:
        self._runs: dict[RequestKey, Run] = {}
        self._cancelled: OrderedDict[RequestKey, None] = OrderedDict()
        self.turn_ends = TurnEnds()
        """Where the turns answered to followers here ended in ``events``, for their
        callers' next reads (:mod:`goaicore.store.turn_ends`)."""

    def running(self, conversation_id: str, request_id: str) -> bool:
        """A turn of the request runs here now."""
        run = self._runs.get((conversation_id, request_id))
        return run is not None and run.started

    def start(self, conversation_id: str, request_id: str, run_id: str | None = None) -> Run:
        """A run of the request begins here; followers of an earlier one are told."""
        key = (conversation_id, request_id)
        run_id = run_id or new_id()
        run = self._runs.setdefault(key, Run(key))
        if run.started:
            run.items = [Restarted(run_id)]
            run.send(run.items[0])
            run.cancel = asyncio.Event()
            run.sinks = []
        run.run_id = run_id
        if key in self._cancelled:  # cancelled before it started
            del self._cancelled[key]
            run.cancel.set()
        return run

    def cancel(self, conversation_id: str, request_id: str) -> bool:
        """Stop the request's turn (it ends with what it generated so far): now if it runs
        here (True), else as soon as it starts here (False)."""
        key = (conversation_id, request_id)
        run = self._runs.get(key)
        if run is None or not run.started:
            self._cancelled[key] = None
            while len(self._cancelled) > CANCELS_KEPT:
                self._cancelled.popitem(last=False)
            return False
        run.cancel.set()
        return True

    def finish(
        self,
        reply: ChatReply,
        answers: str | None = None,
        turn_end: TopicPosition | None = None,
    ) -> None:
        """The request is answered: its followers get the reply and stop. A reply that
        ``answers`` only one request record (not final) goes to the followers that sent
        that record or joined the run; the others wait on for their own record's.
        ``turn_end``: the turn's last event, kept for the followers' next reads."""
        key = (reply.conversation_id, reply.request_id)
        run = self._runs.pop(key, None)
        if run is None:
            return
        if turn_end is not None and run.followers:
            self.turn_ends.put(*key, turn_end)
        if answers is None:
            run.send(reply)
            return
        waiting = []
        for following in run.followers:
            if following.joined or following.sent_at == answers:
                following.queue.put_nowait(reply)
            else:
                waiting.append(following)
        if waiting:  # the late run is over; theirs is still to come
            self._runs[key] = Run(key, followers=waiting)
            for following in waiting:
                following.run = self._runs[key]

    def forget(self, run: Run) -> None:
        """The run is over here. Answered, its followers had the reply; given up, they are
        told so (:class:`TurnAbandoned`) rather than left waiting."""
        if self._runs.get(run.key) is run:
            del self._runs[run.key]
            conversation_id, request_id = run.key
            run.send(
                TurnAbandoned(
                    f"request {request_id!r} of {conversation_id!r}: the worker gave its turn "
                    "up (see its log); ask again with the same request_id",
                    request_id=request_id,
                )
            )

    def follow(self, conversation_id: str, request_id: str) -> Following:
        """Every item of the request's run (those so far first), then its reply;
        following starts now, so call it before the request is sent."""
        key = (conversation_id, request_id)
        run = self._runs.setdefault(key, Run(key))
        following = Following(self, run)
        for item in run.items:
            following.queue.put_nowait(item)
        run.followers.append(following)
        return following

    def unfollow(self, following: Following) -> None:
        run = following.run
        if following in run.followers:
            run.followers.remove(following)
        if not run.followers and not run.started and self._runs.get(run.key) is run:
            del self._runs[run.key]  # nobody runs it, nobody follows it


class Following:
    """One caller's view of a request's stream: take its items with :meth:`next` (the
    last is the reply), then ``close`` it (the turn goes on either way)."""

    def __init__(self, streams: ReplyStreams, run: Run) -> None:
        self.streams = streams
        self.run = run
        self.queue: asyncio.Queue[StreamedReply | Exception] = asyncio.Queue()
        self.sent_at: str | None = None
        """The request record its caller sent (:func:`request_at`), once on the broker."""
        self.joined = False
        """Its caller sent nothing: it joined the turn running already."""

    async def next(self, deadline: float) -> StreamedReply:
        """The next item, waited for until the event loop's ``deadline``
        (``TimeoutError`` then); a run given up raises :class:`TurnAbandoned`."""
        async with asyncio.timeout_at(deadline):
            item = await self.queue.get()
        if isinstance(item, Exception):
            raise item
        return item

    async def items(self, timeout: float, grace: float = 0.0) -> AsyncIterator[StreamedReply]:  # noqa: ASYNC109 - each wait's share of one deadline
        """Every item until the reply, which must come within ``timeout`` (plus
        ``grace``) seconds (:class:`~goaicore.store.errors.ReplyTimeout` then); closes
        this following when done."""
        deadline = asyncio.get_running_loop().time() + timeout + grace
        _, request_id = self.run.key
        try:
            while True:
                try:
                    item = await self.next(deadline)
                except ReplyTimeout:
                    raise
                except TimeoutError:
                    raise timed_out(request_id, timeout) from None
                yield item
                if isinstance(item, ChatReply):
                    return
        finally:
            self.close()

    def close(self) -> None:
        self.streams.unfollow(self)
