"""A streamed turn on the ``reply-stream`` topic: its progress as ``ReplyChunk`` records,
written in small batches, and read back into what a streamed ask yields.

Writing (:class:`ChunkWriter`): a run opens with a ``start`` chunk and closes with an
``end`` one. One batch of chunks is in flight at a time: text that comes while one is on
its way to the broker is held back and leaves, joined into one chunk, as soon as the
broker acknowledges it. So the first token leaves at once, text is held back at most one
produce round trip, and a fast model costs few records. A tool call or result follows
the text before it. Every chunk of a request shares its conversation's key, so they
stay in order on one partition.

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


class ChunkWriter:
    """One run's chunks, batched (see the module docstring); ``text_limit`` bounds the
    text of one chunk (a tool result is cut down to it, with a marker)."""

    def __init__(
        self,
        request: ChatRequest,
        run_id: str,
        send: Send,
        text_limit: int,
    ) -> None:
        self.request = request
        self.run_id = run_id
        self._send = send
        self._text_limit = text_limit
        self._seq = 0
        self._waiting: list[ReplyChunk] = []
        self._held: list[str] = []
        self._flight: asyncio.Task[None] | None = None
        self._failed: BaseException | None = None
        self._queue(ReplyChunkKind.START)
        self._pump()

    def report(self, item: TurnProgress) -> None:
        """Take one item of the turn's progress (never waits)."""
        if isinstance(item, TextDelta):
            self._held.append(item.text)
            if self._flight is None:
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
        """Send what waits, unless a batch is in flight (it sends the rest when it lands)."""
        if self._flight is not None or not self._waiting:
            return
        batch, self._waiting = self._waiting, []
        self._flight = asyncio.create_task(self._deliver(batch))

    async def _deliver(self, batch: list[ReplyChunk]) -> None:
        try:
            await self._send(batch)
        except Exception as err:  # a lost chunk must not fail the turn: the reply is whole
            self._failed = err
        finally:
            self._flight = None
        self._release_text()
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
