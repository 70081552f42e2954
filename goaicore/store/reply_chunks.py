"""A streamed turn on the ``reply-stream`` topic: its progress as ``ReplyChunk`` records,
written in small batches, and read back into what a streamed ask yields.

Writing (:class:`ChunkWriter`): a run opens with a ``start`` chunk and closes with an
``end`` one. Its first text leaves at once; later text is held back and leaves joined
into one chunk once ``hold`` seconds passed since the previous batch left (or
``MAX_HELD_CHARS`` characters wait), and never while a batch is still on its way to the
broker (one in flight at a time). So text waits at most ``hold`` plus one produce round
trip, and a fast model costs a few records a second, not one a token. A tool call or
result leaves at once, after the text before it. Every chunk of a request shares its
conversation's key, so they stay in order on one partition.

Reading (:class:`ChunkReader`): a request's chunks in log order become text deltas, tool
progress and, when a second run of the request starts (its first worker stopped
mid-turn), a ``Restarted``; chunks read twice are skipped by their ``seq``.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Sequence

from goaicore.conversation.progress import (
    TextDelta,
    ToolCallFinished,
    ToolCallStarted,
    TurnProgress,
)
from goaicore.records import ChatRequest, ReplyChunk, ReplyChunkKind, utc_now
from goaicore.records.truncate import truncate_utf8, utf8_size
from goaicore.store.reply_streams import Restarted

log = logging.getLogger(__name__)

RUN_HEADER = "goaicore-run"
"""The header of a ``replies`` record that ends a streamed run: the run's id, so a reader
of both topics knows to read that run's ``end`` chunk before the reply."""

Send = Callable[[Sequence[ReplyChunk]], Awaitable[None]]
"""Sends chunks in order and returns once the broker has them all."""

DEFAULT_HOLD = 0.05
"""Seconds later text is held back to join the text after it (GOAICORE_STREAM_HOLD_MS)."""
MAX_HELD_CHARS = 2048
"""Text held back leaves at once when this many characters wait."""


class ChunkWriter:
    """One run's chunks, batched (see the module docstring); ``text_limit`` bounds the
    text of one chunk (a tool result is cut down to it, with a marker)."""

    def __init__(
        self,
        request: ChatRequest,
        run_id: str,
        send: Send,
        text_limit: int,
        hold: float = DEFAULT_HOLD,
    ) -> None:
        self.request = request
        self.run_id = run_id
        self._send = send
        self._text_limit = text_limit
        self._hold = hold
        self._seq = 0
        self._waiting: list[ReplyChunk] = []
        self._held: list[str] = []
        self._held_chars = 0
        self._text_sent = False
        self._flight: asyncio.Task[None] | None = None
        self._left_at = 0.0  # when the latest batch left (the event loop's clock)
        self._timer: asyncio.TimerHandle | None = None
        self._failed: BaseException | None = None
        self._queue(ReplyChunkKind.START)
        self._pump()

    def report(self, item: TurnProgress) -> None:
        """Take one item of the turn's progress (never waits)."""
        if isinstance(item, TextDelta):
            self._held.append(item.text)
            self._held_chars += len(item.text)
            if self._held_chars >= MAX_HELD_CHARS:
                self._release_text()
        elif isinstance(item, ToolCallStarted):
            self._release_text()
            self._queue(
                ReplyChunkKind.TOOL_CALL,
                tool_call_id=item.call_id,
                tool_name=item.name,
                arguments=self._fit(item.arguments),
            )
        else:
            self._release_text()
            self._queue(
                ReplyChunkKind.TOOL_RESULT,
                text=self._fit(item.text),
                tool_call_id=item.call_id,
                tool_name=item.name,
                is_error=item.is_error,
            )
        self._pump()

    async def end(self) -> None:
        """Send what waits and the ``end`` chunk; return once the broker has every chunk
        of the run (a failed send is logged: the reply goes out all the same)."""
        self._release_text()
        self._queue(ReplyChunkKind.END)
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        while self._flight is not None or self._waiting:
            if self._flight is None:
                self._pump()
            flight = self._flight
            if flight is not None:
                await asyncio.shield(flight)
        if self._failed is not None:
            log.warning(
                "request %s: its stream lost chunks (%s); its reply is whole",
                self.request.request_id,
                self._failed,
            )

    def _release_text(self) -> None:
        if not self._held:
            return
        text = "".join(self._held)
        self._held.clear()
        self._held_chars = 0
        step = max(1, self._text_limit // 4)  # characters: four UTF-8 bytes at most each
        for start in range(0, len(text), step):  # long text takes several chunks
            self._queue(ReplyChunkKind.DELTA, text=text[start : start + step])

    def _fit(self, text: str) -> str:
        if utf8_size(text) <= self._text_limit:
            return text
        return truncate_utf8(
            text, self._text_limit, "cut short on the stream; whole in the history"
        )

    def _queue(self, kind: ReplyChunkKind, **fields: object) -> None:
        chunk = ReplyChunk(
            request_id=self.request.request_id,
            conversation_id=self.request.conversation_id,
            run_id=self.run_id,
            seq=self._seq,
            kind=kind,
            occurred_at=utc_now(),
            **fields,  # type: ignore[arg-type]
        )
        self._seq += 1
        self._waiting.append(chunk)

    def _pump(self) -> None:
        """Send what waits, unless a batch is in flight (it pumps again when it lands) or
        only later text waits and its hold has not passed (a timer pumps then)."""
        if self._flight is not None:
            return
        loop = asyncio.get_running_loop()
        if self._held:
            due = self._left_at + self._hold
            if not self._waiting and self._text_sent and loop.time() < due:
                if self._timer is None:
                    self._timer = loop.call_at(due, self._on_timer)
                return
            self._release_text()
        if not self._waiting:
            return
        batch, self._waiting = self._waiting, []
        self._text_sent = self._text_sent or any(c.kind is ReplyChunkKind.DELTA for c in batch)
        self._left_at = loop.time()
        self._flight = asyncio.create_task(self._deliver(batch))

    def _on_timer(self) -> None:
        self._timer = None
        self._pump()

    async def _deliver(self, batch: list[ReplyChunk]) -> None:
        try:
            await self._send(batch)
        except Exception as err:  # a lost chunk must not fail the turn: the reply is whole
            self._failed = err
        finally:
            self._flight = None
        self._pump()


class ChunkReader:
    """One request's chunks, read into a streamed ask's items in each run's order.

    Chunks may come out of order where a reader joins a running stream (live chunks
    before those it reads back): each run's chunks wait until those before them came,
    from its ``start``. A run whose ``start`` lies after the current one's in the log (its
    offset: a request's chunks share a partition) is a restart, and the runs before it
    are dropped; one whose ``start`` lies before is an older run, read late.
    """

    def __init__(self, conversation_id: str, request_id: str) -> None:
        self.key = (conversation_id, request_id)
        self.run_id: str | None = None
        self.ended = False
        self._started_at: int | None = None  # the offset of the current run's start
        self._next_seq = 0
        self._waiting: dict[str, dict[int, ReplyChunk]] = {}
        self._superseded: set[str] = set()

    def read(self, chunk: ReplyChunk, offset: int) -> list[TurnProgress | Restarted]:
        """What ``chunk``, read at ``offset`` of its partition, adds to the stream, in order
        (nothing for another request's chunk, one read twice, or a kind this reader does
        not know)."""
        if (chunk.conversation_id, chunk.request_id) != self.key:
            return []
        if chunk.run_id in self._superseded:
            return []
        items: list[TurnProgress | Restarted] = []
        if chunk.run_id != self.run_id:
            if chunk.kind is not ReplyChunkKind.START:
                self._waiting.setdefault(chunk.run_id, {})[chunk.seq] = chunk
                return []  # its run's start comes later
            if self._started_at is not None and offset < self._started_at:
                self._superseded.add(chunk.run_id)  # an older run, read late
                self._waiting.pop(chunk.run_id, None)
                return []
            if self.run_id is not None:
                self._superseded.add(self.run_id)
                self._waiting.pop(self.run_id, None)
                items.append(Restarted(chunk.run_id))
            self.run_id, self._started_at = chunk.run_id, offset
            self._next_seq, self.ended = 0, False
        if chunk.seq < self._next_seq:
            return items  # read twice
        waiting = self._waiting.setdefault(chunk.run_id, {})
        waiting[chunk.seq] = chunk
        while self._next_seq in waiting:
            ready = waiting.pop(self._next_seq)
            self._next_seq += 1
            progress = _progress(ready)
            if progress is not None:
                items.append(progress)
            if ready.kind is ReplyChunkKind.END:
                self.ended = True
        return items


def _progress(chunk: ReplyChunk) -> TurnProgress | None:
    if chunk.kind is ReplyChunkKind.DELTA:
        return TextDelta(chunk.text)
    if chunk.kind is ReplyChunkKind.TOOL_CALL:
        return ToolCallStarted(
            chunk.tool_call_id or "", chunk.tool_name or "", chunk.arguments or ""
        )
    if chunk.kind is ReplyChunkKind.TOOL_RESULT:
        return ToolCallFinished(
            chunk.tool_call_id or "", chunk.tool_name or "", chunk.text, chunk.is_error
        )
    return None  # start, end, or a kind added later
