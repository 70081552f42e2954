"""AsyncChatClient: send chat requests and wait for the matching replies, without
blocking the event loop. The core of both chat clients: :class:`~goaicore.clients.ChatClient`
is its sync facade.

One listener task reads the ``replies`` topic for every ask of this client; it is
positioned at the end of every partition in ``start()``, before any request
leaves, so no reply can slip past it. Replies are matched by request id.

A streamed ask (:meth:`AsyncChatClient.ask_stream`) also reads ``reply-stream``, with a
second consumer opened on the first one; a retried streamed ask reads its
conversation's partition back over the last ``GOAICORE_TURN_TIMEOUT`` seconds and a
minute (with a consumer of its own), so it joins a running turn's stream from its start.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Self

from goaicore.errors import BrokerError, client_errors
from goaicore.kafka.aio_connection import (
    broker_down,
    partitions_of,
    start_consumer,
    start_producer,
    stop_all,
)
from goaicore.kafka.partitioner import partition_for
from goaicore.lifecycle import AsyncRunning
from goaicore.records import ChatReply, ReplyChunk, new_id, utc_now
from goaicore.records.avro.api import decode_chat_reply, decode_reply_chunk
from goaicore.records.avro.errors import DecodeError
from goaicore.records.validation import check_conversation_id, check_request_id
from goaicore.settings import Settings
from goaicore.store.errors import not_acknowledged, timed_out
from goaicore.store.inputs import cancel_record, chat_request_record
from goaicore.store.reply_chunks import RUN_HEADER, ChunkReader
from goaicore.store.reply_streams import ANSWERS_HEADER, StreamedReply, request_at
from goaicore.store.turn_ends import TurnEnds, turn_end_of
from goaicore.tracing import ask_span, record_headers

log = logging.getLogger(__name__)

STREAM_END_GRACE = 2.0
"""Seconds a streamed ask waits, once its reply is in, for the rest of its stream (the
two come on different topics): the reply is whole, so only late text is lost."""
SEND_TIMEOUT = 30.0
"""Seconds ``send`` and ``cancel`` wait by default for the broker to acknowledge a request."""
ASKED_KEPT = 4096
"""Request ids this client asked, with their conversation (for ``cancel``), newest kept."""


class AsyncChatClient(AsyncRunning):
    """Request/reply over Kafka: ``await ask(...)`` waits for the reply, ``send`` does not.

    ``request_id`` makes a retry idempotent (the worker answers a request id it has
    answered before with the stored reply), and ReplyTimeout carries it.
    """

    def __init__(self, settings: Settings | None = None, source: str = "chat-client") -> None:
        self.settings = settings or Settings()
        self.source = source
        self.requests_topic = self.settings.topic("requests")
        self.replies_topic = self.settings.topic("replies")
        self.stream_topic = self.settings.topic("reply-stream")
        self.events_topic = self.settings.topic("events")  # where replies' turns end
        self.skipped = 0
        self._producer: Any = None
        self._consumer: Any = None
        self._listener: asyncio.Task[None] | None = None
        self._listener_error: BaseException | None = None
        self._pending: dict[str, list[_Asked]] = {}  # by request id
        self._chunks: Any = None  # the reply-stream consumer, opened by the first stream
        self._chunk_listener: asyncio.Task[None] | None = None
        self._chunks_opening = asyncio.Lock()
        self._streams: dict[tuple[str, str], list[asyncio.Queue[Any]]] = {}
        self._asked: dict[str, str] = {}  # request id -> conversation id
        self.turn_ends = TurnEnds()
        """Where the turns of the replies this client's asks took ended in ``events``
        (:mod:`goaicore.store.turn_ends`): a store over it reads after them."""

    async def start(self) -> Self:
        if self._listener is not None:
            return self
        try:
            # No linger: each request is sent and waited for alone.
            self._producer = await start_producer(self.settings, linger_ms=0)
            self._consumer = await self._reader_at_end(self.replies_topic)
        except BaseException:
            await self.close()
            raise
        self._listener = asyncio.create_task(self._listen(), name="goaicore-replies")
        return self

    async def send(
        self,
        conversation_id: str,
        text: str,
        system: str | None = None,
        tools: Iterable[str] = (),
        model: str | None = None,
        deadline: datetime | None = None,
        request_id: str | None = None,
        stream: bool = False,
        timeout: float | None = SEND_TIMEOUT,  # noqa: ASYNC109 - ChatClient.send's shape
        *,
        regenerate: bool = False,
    ) -> str:
        """Publish a chat request and return its request id without waiting for the reply
        (``stream``: its progress goes to ``reply-stream`` as it happens; ``regenerate``:
        the turn replaces the conversation's last exchange, ``text`` being its user
        message, and the rewind that undoes it is appended with the new turn, never
        alone).

        Past ``timeout`` seconds (None: no bound) without the broker's acknowledgement:
        NotAcknowledged with the request id. The request may still reach the broker once
        it is back; sending it again with that ``request_id`` is answered once."""
        request_id, _ = await self._send_chat(
            conversation_id,
            text,
            system,
            tools,
            model,
            deadline,
            request_id,
            stream,
            timeout,
            regenerate=regenerate,
        )
        return request_id

    async def _send_chat(
        self,
        conversation_id: str,
        text: str,
        system: str | None,
        tools: Iterable[str],
        model: str | None,
        deadline: datetime | None,
        request_id: str | None,
        stream: bool,
        timeout: float | None,  # noqa: ASYNC109 - the bound of send()
        *,
        regenerate: bool,
    ) -> tuple[str, str]:
        """:meth:`send`: the request id, and where its record landed (``request_at``)."""
        request, payload = chat_request_record(
            self.settings,
            conversation_id,
            text,
            system,
            tools,
            model,
            deadline,
            request_id,
            stream=stream,
            regenerate=regenerate,
        )
        at = await self._send_request(conversation_id, payload, request.request_id, timeout)
        self._asked[request.request_id] = conversation_id
        while len(self._asked) > ASKED_KEPT:
            del self._asked[next(iter(self._asked))]
        return request.request_id, at

    async def cancel(
        self,
        request_id: str,
        *,
        conversation_id: str | None = None,
        timeout: float | None = SEND_TIMEOUT,  # noqa: ASYNC109 - as in send()
    ) -> None:
        """Stop the turn of ``request_id`` (asked by this client, or in
        ``conversation_id``): it ends with the text generated so far, recorded as a
        cancelled turn, and its reply says ``cancelled``. A cancel that comes before the
        turn starts stops it as it starts; one after it finished changes nothing
        (NotAcknowledged past ``timeout`` seconds: cancelling again is harmless)."""
        request_id = check_request_id(request_id)
        conversation_id = conversation_id or self._asked.get(request_id)
        if conversation_id is None:
            raise ValueError(
                f"request {request_id!r} was not asked by this client: name its conversation_id"
            )
        request, payload = cancel_record(self.settings, conversation_id, request_id)
        await self._send_request(request.conversation_id, payload, request_id, timeout)

    async def _send_request(
        self,
        conversation_id: str,
        payload: bytes,
        request_id: str,
        timeout: float | None,  # noqa: ASYNC109 - the bound of send()
    ) -> str:
        """Send a request's record; where it landed (see ``request_at``)."""
        producer = self._started()
        try:
            async with asyncio.timeout(timeout):
                with client_errors():
                    delivery = await producer.send(
                        self.requests_topic,
                        key=conversation_id.encode(),
                        value=payload,
                        headers=record_headers(),
                    )
                    landed = await delivery
                    return request_at(landed.partition, landed.offset)
        except TimeoutError:
            raise not_acknowledged(timeout, request_id=request_id) from None

    async def ask(
        self,
        conversation_id: str,
        text: str,
        timeout: float = 30.0,  # noqa: ASYNC109 - ChatClient.ask's shape; it also sets the deadline
        system: str | None = None,
        tools: Iterable[str] = (),
        model: str | None = None,
        request_id: str | None = None,
        deadline: datetime | None = None,
        *,
        regenerate: bool = False,
    ) -> ChatReply:
        """Send a chat request and wait up to ``timeout`` seconds, sending included, for
        its reply (ReplyTimeout past it, also while the broker is down).

        Pass the ``request_id`` of an earlier ask (``ReplyTimeout.request_id``, or
        the reply's) to retry it: the worker answers with that request's reply and
        runs no second LLM turn, also after a restart. The reply carries the id.

        The worker gives up on the turn at ``deadline`` (default: when this wait
        ends). A later deadline lets the turn finish after a ReplyTimeout, so that
        asking again with the same id gets its answer. ``regenerate``: as in
        :meth:`send`.
        """
        request_id = new_id() if request_id is None else check_request_id(request_id)
        with ask_span(conversation_id, request_id):
            return await self._ask(
                conversation_id,
                text,
                timeout,
                system,
                tools,
                model,
                request_id,
                deadline,
                regenerate=regenerate,
            )

    async def _ask(
        self,
        conversation_id: str,
        text: str,
        timeout: float,  # noqa: ASYNC109 - the ask's wait, as in ask()
        system: str | None,
        tools: Iterable[str],
        model: str | None,
        request_id: str,
        deadline: datetime | None,
        stream: bool = False,
        regenerate: bool = False,
        queue: asyncio.Queue[Any] | None = None,
    ) -> ChatReply:
        """Send the request, then wait for its reply (``queue``: the stream it feeds)."""
        self._started()
        if self._listener_error is not None:
            error = self._listener_error
            raise BrokerError(f"the reply listener failed: {error}") from error
        asked = _Asked(asyncio.get_running_loop().create_future(), queue)
        self._pending.setdefault(request_id, []).append(asked)
        try:
            if deadline is None:
                deadline = utc_now() + timedelta(seconds=timeout)
            sent = False
            try:
                # One bound for the request's delivery and its reply: while the broker is
                # down, the producer would retry the delivery for ever.
                async with asyncio.timeout(timeout):
                    _, asked.sent_at = await self._send_chat(
                        conversation_id,
                        text,
                        system,
                        tools,
                        model,
                        deadline,
                        request_id,
                        stream,
                        None,
                        regenerate=regenerate,
                    )
                    sent = True
                    return await asyncio.shield(asked.future)
            except TimeoutError:
                raise timed_out(request_id, timeout, sent) from None
        finally:
            waiting = self._pending[request_id]
            waiting.remove(asked)
            if not waiting:
                del self._pending[request_id]

    async def ask_stream(
        self,
        conversation_id: str,
        text: str,
        timeout: float = 30.0,  # noqa: ASYNC109 - the wait for the reply, as in ask()
        system: str | None = None,
        tools: Iterable[str] = (),
        model: str | None = None,
        request_id: str | None = None,
        deadline: datetime | None = None,
        join: bool | None = None,
    ) -> AsyncIterator[StreamedReply]:
        """``ask``, streamed: the turn's text deltas and tool calls as they happen (a
        ``Restarted`` when another worker runs it again from the start: drop the text
        shown so far), then its ``ChatReply``. ``request_id`` retries as for ``ask``; a
        retry whose turn still runs joins its stream from the start (``join``, by
        default when a ``request_id`` is given). Leaving early does not stop the turn
        (:meth:`cancel` does)."""
        check_conversation_id(conversation_id)
        joining = request_id is not None if join is None else join
        request_id = new_id() if request_id is None else check_request_id(request_id)
        self._started()
        await self._open_chunks()
        key = (conversation_id, request_id)
        queue: asyncio.Queue[Any] = asyncio.Queue()
        self._streams.setdefault(key, []).append(queue)
        tasks: list[asyncio.Task[Any]] = []
        try:
            if joining:  # live chunks wait in the reader for those read back before them
                tasks.append(asyncio.create_task(self._read_back(conversation_id, queue)))
            asking = asyncio.create_task(
                self._ask(
                    conversation_id,
                    text,
                    timeout,
                    system,
                    tools,
                    model,
                    request_id,
                    deadline,
                    True,
                    queue=queue,
                )
            )
            asking.add_done_callback(lambda done: _to_queue(done, queue))
            tasks.append(asking)
            async for item in _streamed(conversation_id, request_id, queue):
                yield item
        finally:
            self._streams[key].remove(queue)
            if not self._streams[key]:
                del self._streams[key]
            for task in tasks:
                task.cancel()
            if tasks:
                await asyncio.wait(tasks)  # an outer cancel still reaches this task

    async def _open_chunks(self) -> None:
        """The reply-stream consumer, at the end of every partition (opened once)."""
        async with self._chunks_opening:
            if self._chunks is not None:
                return
            self._chunks = await self._reader_at_end(self.stream_topic)
            self._chunk_listener = asyncio.create_task(
                self._listen_chunks(), name="goaicore-reply-stream"
            )

    async def _reader_at_end(self, topic: str) -> Any:
        """A consumer of every partition of ``topic``, its position at the end resolved now:
        what is written after this returns cannot slip past it."""
        consumer = await start_consumer(self.settings)
        try:
            partitions = await partitions_of(consumer, topic)
            consumer.assign(partitions)
            with client_errors():
                await consumer.seek_to_end(*partitions)
                for partition in partitions:
                    await consumer.position(partition)
        except BaseException:
            await stop_all(consumer)
            raise
        return consumer

    async def _read_back(self, conversation_id: str, queue: asyncio.Queue[Any]) -> None:
        """The conversation's chunks of the last turn timeout (and a minute), read again by
        a consumer of its own up to where the shared one stood, so a joined stream starts
        at its run's first chunk; the shared consumer, and every other stream, go on."""
        count = len(self._chunks.assignment())
        number = partition_for(conversation_id, count)
        consumer = await start_consumer(self.settings)
        try:
            partition = next(
                p for p in await partitions_of(consumer, self.stream_topic) if p.partition == number
            )
            consumer.assign([partition])
            since = utc_now() - timedelta(seconds=self.settings.turn_timeout + 60)
            with client_errors():
                found = await consumer.offsets_for_times({partition: int(since.timestamp() * 1000)})
                end = (await consumer.end_offsets([partition]))[partition]
                offset = found.get(partition)
                if offset is None:
                    return  # nothing written since
                consumer.seek(partition, offset.offset)
                while await consumer.position(partition) < end:
                    batches = await consumer.getmany(partition, timeout_ms=500)
                    for record in batches.get(partition, ()):
                        chunk = _chunk_of(record)
                        if chunk is not None and chunk.conversation_id == conversation_id:
                            queue.put_nowait((chunk, record.offset))
        except Exception:  # the live stream goes on without the start it missed
            log.warning("could not read back reply-stream for %s", conversation_id, exc_info=True)
        finally:
            await stop_all(consumer)

    async def _listen_chunks(self) -> None:
        """Chunks to the streams of this client, as they come; a failed read is logged and
        tried again (a stream never stops for it: its reply comes on ``replies``)."""
        while True:
            try:
                with client_errors():
                    batches = await self._chunks.getmany(timeout_ms=200)
            except asyncio.CancelledError:
                raise
            except Exception:
                log.warning("reading reply-stream failed; trying again", exc_info=True)
                await asyncio.sleep(1.0)
                continue
            for records in batches.values():
                for record in records:
                    chunk = _chunk_of(record)
                    if chunk is None:
                        continue
                    for queue in self._streams.get((chunk.conversation_id, chunk.request_id), ()):
                        queue.put_nowait((chunk, record.offset))

    async def _listen(self) -> None:
        """Replies to their asks, as they come. A read that fails for the broker's
        absence is tried again (the asks waiting meanwhile time out on their own), so
        the client works again once the broker is back; any other failure stops it."""
        try:
            while True:
                try:
                    with client_errors():
                        batches = await self._consumer.getmany(timeout_ms=200)
                except Exception as err:
                    if not broker_down(err):
                        raise
                    log.warning("reading replies failed (%s); trying again", type(err).__name__)
                    await asyncio.sleep(1.0)
                    continue
                for records in batches.values():
                    for record in records:
                        self._deliver(record)
        except asyncio.CancelledError:
            raise
        except Exception as err:
            self._listener_error = err
            log.exception("reply listener stopped")
            for future in (asked.future for waiting in self._pending.values() for asked in waiting):
                if not future.done():
                    failed = BrokerError(f"the reply listener failed: {err}")
                    failed.__cause__ = err
                    future.set_exception(failed)

    def _deliver(self, record: Any) -> None:
        reply = reply_of(record)
        if reply is None:
            self.skipped += 1
            return
        headers = dict(record.headers or ())
        answers = headers.get(ANSWERS_HEADER)  # not final: only its own request's asker's
        at = answers.decode(errors="replace") if answers is not None else None
        waiting = self._pending.get(reply.request_id, ())
        if waiting:
            end = turn_end_of(record.headers, self.events_topic)
            if end is not None:
                self.turn_ends.put(reply.conversation_id, reply.request_id, end)
        for asked in waiting:
            if (at is None or asked.sent_at == at) and not asked.future.done():
                asked.future.set_result(reply)
        streams = self._streams.get((reply.conversation_id, reply.request_id))
        if streams and at is not None:
            theirs = [a.queue for a in waiting if a.sent_at == at]
            streams = [queue for queue in streams if any(queue is q for q in theirs)]
        if streams:
            run = headers.get(RUN_HEADER)
            replied = Replied(reply, run.decode(errors="replace") if run else None)
            for queue in streams:
                queue.put_nowait(replied)

    def _started(self) -> Any:
        if self._producer is None or self._listener is None:
            raise RuntimeError("use `async with AsyncChatClient(...)`, or await start() first")
        return self._producer

    async def close(self) -> None:
        for name in ("_listener", "_chunk_listener"):
            listener = getattr(self, name)
            setattr(self, name, None)
            if listener is not None:
                listener.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await listener
        clients = (self._consumer, self._chunks, self._producer)
        self._consumer = self._chunks = self._producer = None
        await stop_all(*clients)


def reply_of(record: Any) -> ChatReply | None:
    """The reply a record of the replies topic holds; None (logged) when it does not decode."""
    try:
        return decode_chat_reply(record.value)
    except DecodeError as err:
        log.warning(
            "skipped an undecodable reply at %s[%d]@%d: %s",
            record.topic,
            record.partition,
            record.offset,
            err.reason,
        )
        return None


def _chunk_of(record: Any) -> ReplyChunk | None:
    """The chunk a record of reply-stream holds; None when it does not decode (skipped:
    the stream's reply is whole all the same)."""
    try:
        return decode_reply_chunk(record.value)
    except DecodeError as err:
        log.debug("skipped an undecodable chunk: %s", err.reason)
        return None


@dataclass
class _Asked:
    """One ask waiting for its reply: the request record it sent (once on the broker) and
    the stream it feeds, if streamed. A reply that is not final is taken only by the ask
    whose record it names (a retry sent before the late original was handled waits on)."""

    future: asyncio.Future[ChatReply]
    queue: asyncio.Queue[Any] | None = None
    sent_at: str | None = None


@dataclass(frozen=True)
class Replied:
    """A streamed request's reply, with the run it ends (None: no run streamed it, e.g.
    a reply sent again for a request answered before)."""

    reply: ChatReply
    run_id: str | None


def _to_queue(asked: asyncio.Task[ChatReply], queue: asyncio.Queue[Any]) -> None:
    """The error that ended the ask (a timeout, a broker error) to the stream's queue; its
    reply comes there from the listener."""
    if not asked.cancelled() and asked.exception() is not None:
        queue.put_nowait(asked.exception())


async def _streamed(
    conversation_id: str, request_id: str, queue: asyncio.Queue[Any]
) -> AsyncIterator[StreamedReply]:
    """A request's chunks, read into its stream's items, then its reply: at once when no
    run streamed it, else once that run's ``end`` is read (or ``STREAM_END_GRACE`` after
    the reply came)."""
    reader = ChunkReader(conversation_id, request_id)
    replied: Replied | None = None
    while True:
        try:
            async with asyncio.timeout(STREAM_END_GRACE if replied is not None else None):
                item = await queue.get()
        except TimeoutError:
            item = None
        if isinstance(item, BaseException):
            raise item
        if isinstance(item, Replied):
            replied = item
        elif item is not None:
            for progress in reader.read(*item):
                yield progress
        if replied is not None and (
            item is None
            or replied.run_id is None
            or (reader.ended and reader.run_id == replied.run_id)
        ):
            yield replied.reply
            return
