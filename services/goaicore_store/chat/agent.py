"""The chat agent: answer each ChatRequest with an LLM turn, in order per conversation.

For each request (see :class:`ChatAgent`):

0. a request (or a cancel) in another partition than its key's is not this
   partition's to answer: it is forwarded, as it is, to its key's partition of
   ``requests`` (:mod:`goaicore_store.forwarding`), whose owner answers it; a
   request answered where it landed would run on a snapshot this worker may not
   hold and append as a second writer of the conversation;
1. decode it; an undecodable one, or one under another conversation's key,
   goes to the dead-letter topic (the latter is also answered ``rejected``);
2. a request id already answered gets its stored reply again (idempotency);
3. read-your-writes: wait until this worker's fold has applied what the
   conversation's ``events`` partition held when the request was taken up;
4. run the turn on the snapshot (or recover it from the log after a crash; a
   regenerate's on the history as the undo it carries leaves it, read from the
   conversation's log, the rewind appended with the turn's events); a
   request that asks for streaming has its progress written to ``reply-stream`` as
   it happens (:mod:`goaicore.store.reply_chunks`), ending before its reply;
5. append the turn's events, wait for the broker's acks, remember the reply
   when it is final (:class:`~goaicore.store.turns.TurnOutcome`), publish the
   reply, and only then acknowledge the request's offset.

A cancel (a request with ``cancel`` set) is not queued behind its conversation's
running turn: it is taken as it is read and stops that turn, which ends with what it
generated so far (recorded, and answered ``cancelled``).

A rebalance hands a partition back from its last committed offset, so a request
answered since is read again. If this process answered that very record (its
topic, partition and offset), its reply is already on the replies topic and the
record is acknowledged without a second copy; a request read again by another
process, or sent again by a client, gets its stored reply again.

Requests are read from a no-ack stream and dispatched per conversation
(:mod:`goaicore.store.ordering`); Faust commits a partition's offset only up
to the first request not yet finished, so a crash redelivers exactly the
unfinished ones.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from opentelemetry.trace import SpanKind

from goaicore.conversation.progress import OnProgress
from goaicore.fold.admission import INVALID_CONVERSATION_ID, TOO_LARGE, another_partition
from goaicore.kafka.aio_connection import broker_down
from goaicore.kafka.faust.offsets import committed_offset
from goaicore.kafka.faust.transport import steady_producer
from goaicore.kafka.partitioner import partition_for
from goaicore.kafka.record_batches import positions
from goaicore.logs import log_context, origin
from goaicore.records import (
    ChatReply,
    ChatRequest,
    ConversationEvent,
    ConversationRewound,
    ReplyChunk,
    ReplyStatus,
    TopicPosition,
)
from goaicore.records.avro.api import (
    decode_chat_request,
    encode_chat_reply,
    encode_event,
    encode_reply_chunk,
)
from goaicore.records.avro.errors import DecodeError
from goaicore.records.validation import conversation_id_problem
from goaicore.sealing.records import seal_event
from goaicore.store import history
from goaicore.store.backend import StoreBackend
from goaicore.store.idempotency import RecentReplies, answer
from goaicore.store.inputs import RecordLimits
from goaicore.store.ordering import KeyedDispatcher
from goaicore.store.reply_chunks import RUN_HEADER, ChunkWriter
from goaicore.store.reply_streams import ANSWERS_HEADER, Run, request_at
from goaicore.store.turn_ends import turn_end_header
from goaicore.store.turns import TurnOutcome, failure
from goaicore.tracing import context_of, record_headers, tracer
from goaicore_store.forwarding import forward
from goaicore_store.metrics import MeasuredProvider

if TYPE_CHECKING:
    from goaicore_store.topology import ChatServices, StoreApp

log = logging.getLogger(__name__)
TRACER = tracer(__name__)

SEND_ATTEMPTS = 5
BROKER_RETRY_PAUSE = 2.0
"""Seconds between tries of a request whose handling failed because the broker is down."""
T = TypeVar("T")
ANSWERED_KEPT = 8192  # positions of requests this process answered, newest kept


class ChatAgent:
    """Consumes ``requests`` (see the module docstring)."""

    def __init__(self, store: StoreApp, services: ChatServices, reader: StoreBackend) -> None:
        self.store = store
        self.services = services
        self.reader = reader
        """Reads a conversation's records, for what a regenerate undoes."""
        self._answered: OrderedDict[tuple[str, int, int], None] = OrderedDict()

    async def consume(self, stream: Any) -> None:
        """The Faust agent body: dispatch each request to its conversation's queue (a
        cancel is taken at once: its turn is the one running)."""
        concurrency = self.services.concurrency
        dispatcher: KeyedDispatcher[tuple[Any, ChatRequest | DecodeError]] = KeyedDispatcher(
            self.handle, concurrency, max_waiting=concurrency * 8
        )
        partitions = self.store.settings.partitions
        try:
            async for event in stream.noack().events():
                message = event.message
                owner = another_partition(message.key, message.partition, partitions)
                if owner is not None:  # in order: a key's requests keep theirs
                    await self._forward(message, owner)
                    event.ack()
                    continue
                decoded = _decoded(event.message.value)
                if isinstance(decoded, ChatRequest) and decoded.cancel:
                    await self._cancel(decoded, event.message)  # now: its turn runs
                    event.ack()
                    continue
                await dispatcher.submit(event.message.key or b"", (event, decoded))
        finally:
            await dispatcher.close()

    async def _forward(self, message: Any, owner: int) -> None:
        """Send a request on to its key's partition (tried again a few times: a repeat
        is answered once, by request id); never raises: the loop goes on."""

        async def send() -> None:
            for delivery in await forward(self.store, message, "requests", owner):
                await delivery

        try:
            await _retrying(send)
        except Exception:
            log.exception(
                "request at %s[%d]@%d not forwarded to partition %d",
                message.topic,
                message.partition,
                message.offset,
                owner,
            )

    async def _cancel(self, request: ChatRequest, message: Any) -> None:
        """Stop the request's turn here (now, or as it starts); a cancel under another
        conversation's key is set aside. Never raises: the loop reading requests goes on."""
        try:
            if message.key != request.conversation_id.encode():  # not this key's to stop
                detail = (
                    f"record key {message.key!r} is not the cancel's conversation id "
                    f"{request.conversation_id!r}"
                )
                await self.store.dead_letter(message, "key-mismatch", detail)
                return
            problem = conversation_id_problem(request.conversation_id)
            if problem is not None:
                await self.store.dead_letter(message, INVALID_CONVERSATION_ID, problem)
                return
            running = self.services.streams.cancel(request.conversation_id, request.request_id)
            log.info(
                "request %s: cancel %s",
                request.request_id,
                "sent to its running turn" if running else "kept for when its turn starts",
                extra=origin(message),
            )
        except Exception:
            log.exception(
                "cancel at %s[%d]@%d not taken", message.topic, message.partition, message.offset
            )

    async def handle(self, item: tuple[Any, ChatRequest | DecodeError]) -> None:
        """Process one request event, then acknowledge it (so its offset may be committed)."""
        event, decoded = item
        app = self.store.app
        if event.message.generation_id != app.consumer_generation_id:
            # Queued before a rebalance: the partition's new owner reads it again.
            return
        while True:
            try:
                await self.process(event.message, decoded)
                break
            except Exception as err:
                if broker_down(err) and event.message.generation_id == app.consumer_generation_id:
                    # An acknowledged request is not dropped for an outage: tried again
                    # until the broker is back (or a rebalance gives the partition to its
                    # next owner, which reads it again). Nothing commits meanwhile anyway.
                    log.warning(
                        "chat request at %s[%d]@%d waits for the broker (%s); trying again",
                        event.message.topic,
                        event.message.partition,
                        event.message.offset,
                        type(err).__name__,
                    )
                    await asyncio.sleep(BROKER_RETRY_PAUSE)
                    continue
                # Not the broker's absence: give up on this one rather than hold the
                # partition's commits and rebalances forever. The client's retry with the
                # same request id is answered idempotently.
                log.exception(
                    "chat request at %s[%d]@%d abandoned",
                    event.message.topic,
                    event.message.partition,
                    event.message.offset,
                )
                break
        event.ack()

    async def process(self, message: Any, decoded: ChatRequest | DecodeError | None = None) -> None:
        """Answer the request at ``message`` once; every line logged meanwhile names it."""
        with log_context(**origin(message)):
            await self._process(message, _decoded(message.value) if decoded is None else decoded)

    async def _process(self, message: Any, decoded: ChatRequest | DecodeError) -> None:
        position = (message.topic, message.partition, message.offset)
        if position in self._answered:
            log.info(
                "request at %s[%d]@%d read again after a rebalance: answered already",
                *position,
            )
            return
        await self._answer(message, decoded)
        self._answered[position] = None
        while len(self._answered) > ANSWERED_KEPT:
            self._answered.popitem(last=False)

    async def _answer(self, message: Any, request: ChatRequest | DecodeError) -> None:
        if isinstance(request, DecodeError):
            await self.store.dead_letter(message, request.reason, request.message)
            return
        limit = self.store.settings.max_record_bytes
        size = len(message.value or b"")
        if size > limit:  # a producer that is not goaicore's may send one
            await self._refuse_too_large(message, request, size, limit)
            return
        with (
            log_context(request_id=request.request_id, conversation_id=request.conversation_id),
            TRACER.start_as_current_span(
                "chat.turn",
                context=context_of(message.headers),  # the client's trace, continued
                kind=SpanKind.CONSUMER,
                attributes={
                    "goaicore.conversation_id": request.conversation_id,
                    "goaicore.request_id": request.request_id,
                },
            ),
        ):
            await self._answer_request(message, request)

    async def _refuse_too_large(
        self, message: Any, request: ChatRequest, size: int, limit: int
    ) -> None:
        """A request over the record limit is not run: its dead letter, and a rejected
        reply for its asker (as for a request under another key: none under an id no
        caller can give)."""
        detail = (
            f"the request is {size:,} bytes; at most {limit:,} (GOAICORE_MAX_RECORD_BYTES): not run"
        )
        await self.store.dead_letter(message, TOO_LARGE, detail)
        if conversation_id_problem(request.conversation_id) is None:  # else no caller has it
            await self._reject_record(request, TOO_LARGE, detail)

    async def _reject_record(self, request: ChatRequest, kind: str, detail: str) -> None:
        """A rejected reply to a request record set aside before its turn, to its asker
        only: not to the followers of the conversation's request of that id, not theirs."""
        reply = failure(request, ReplyStatus.REJECTED, kind, detail).reply
        await self.publish_reply(self.services.limits.fit_reply(reply), followed=False)
        self.store.metrics.answered(reply, ())

    async def _answer_request(self, message: Any, request: ChatRequest) -> None:
        key: bytes = request.conversation_id.encode()
        if message.key != key:
            detail = (
                f"record key {message.key!r} is not the request's conversation id "
                f"{request.conversation_id!r}"
            )
            await self.store.dead_letter(message, "key-mismatch", detail)
            await self._reject_record(request, "key-mismatch", detail)
            return
        problem = conversation_id_problem(request.conversation_id)
        if problem is not None:  # a foreign producer's: no reply under a key no caller has
            await self.store.dead_letter(message, INVALID_CONVERSATION_ID, problem)
            return
        stored = self._stored_replies(key).get(request.request_id)
        if stored is not None:
            log.info("request %s answered before: sending its reply again", request.request_id)
            await self.publish_reply(stored)
            return
        with TRACER.start_as_current_span("chat.read_your_writes"):
            await self._read_your_writes(request, message.partition, key)
        run = self.services.streams.start(request.conversation_id, request.request_id)
        try:
            await self._run(request, key, run, request_at(message.partition, message.offset))
        finally:
            self.services.streams.forget(run)  # answered, or given up: either way done here

    async def _run(self, request: ChatRequest, key: bytes, run: Run, at: str) -> None:
        """Run the request's turn (streamed where it asks to be), append it, reply; ``at``:
        the request's record, which a reply that is not final names."""
        writer: ChunkWriter | None = None
        if request.stream:
            writer = ChunkWriter(
                request,
                run.run_id,
                self._chunk_sender(key),
                self._chunk_text,
                self.store.settings.stream_hold_ms / 1000,
            )
            run.sinks.append(writer.report)
        outcome = await self._outcome(request, key, run.report if request.stream else None, run)
        if writer is not None:
            with TRACER.start_as_current_span("chat.stream.end"):
                await writer.end()
        limits = self.services.limits
        events = limits.fit_events(outcome.events)
        with TRACER.start_as_current_span("chat.events.append") as span:
            span.set_attribute("goaicore.events", len(events))
            turn_end = await self.append(events)
        reply = limits.fit_reply(outcome.reply)
        # Stored before it is published: a client that has seen this reply gets the
        # same one again for its request id, also from a worker that took over. Only a
        # final one: a request that was late to run is run by its retry.
        if outcome.final:
            with TRACER.start_as_current_span("chat.reply.store"):
                await self.store.replies_table.put(
                    key, self._stored_replies(key).with_reply(reply, limits.replies_table_bytes)
                )
        with TRACER.start_as_current_span("chat.reply.publish") as span:
            span.set_attribute("goaicore.status", reply.status.value)
            await self.publish_reply(
                reply,
                run.run_id if writer is not None else None,
                answers=None if outcome.final else at,
                turn_end=turn_end,
            )
        self.store.metrics.answered(reply, events)

    async def _read_your_writes(self, request: ChatRequest, partition: int, key: bytes) -> None:
        metrics = self.store.metrics
        started = time.perf_counter()
        deadline = started + self.services.read_wait
        intake = self.services.intake_watermarks
        if intake is not None:  # what publishers wrote before the request, sealed first
            high = await intake.get(partition)
            if not await self.store.intake_progress.wait_applied(
                partition,
                high,
                lambda: None,
                self.services.read_wait,
                self._committed("intake", partition),
            ):
                self._not_caught_up(request, "intake", partition, high)
        high = await self.services.watermarks.get(partition)
        caught_up = await self.store.progress.wait_applied(
            partition,
            high,
            lambda: self.store.table.get(key),
            max(0.0, deadline - time.perf_counter()),
            self._committed("events", partition),
        )
        metrics.read_waits.inc()
        metrics.read_wait_seconds.observe(time.perf_counter() - started)
        if not caught_up:
            self._not_caught_up(request, "events", partition, high)

    def _committed(self, name: str, partition: int) -> Callable[[], int | None]:
        topic = self.store.settings.topic(name)
        return lambda: committed_offset(self.store.app, topic, partition)

    def _not_caught_up(self, request: ChatRequest, name: str, partition: int, high: int) -> None:
        self.store.metrics.read_timeouts.inc()
        log.warning(
            "request %s: %s[%d] not taken in up to %d after %.1f s; answering with the "
            "snapshot as it is (GOAICORE_READ_WAIT)",
            request.request_id,
            name,
            partition,
            high,
            self.services.read_wait,
        )

    async def _outcome(
        self, request: ChatRequest, key: bytes, on_progress: OnProgress | None, run: Run
    ) -> TurnOutcome:
        metrics = self.store.metrics
        return await answer(
            request,
            self.store.table.get(key),
            lambda model: MeasuredProvider(self.services.providers.get(model), metrics),
            self.services.registry,
            self.services.turn,
            on_progress,
            run.cancel,
            lambda: self._regeneration(request.conversation_id),
        )

    async def _regeneration(self, conversation_id: str) -> tuple[ConversationRewound, str]:
        """What a regenerate of the conversation undoes, from its log as it is now (the
        fold of this worker has applied it: read-your-writes)."""
        policy = history.policy_for(
            self.store.table.get(conversation_id.encode()), self.reader.record_limit
        )
        records = await self.reader.records(conversation_id)
        limits = RecordLimits(self.reader.record_limit, self.reader.intake)  # room to seal
        return history.regeneration(conversation_id, records, policy, self.reader.keys, limits)

    def _chunk_sender(self, key: bytes) -> Callable[[Sequence[ReplyChunk]], Awaitable[None]]:
        """Sends a run's chunks record by record, into the producer's open batch of their
        partition: the chunks of all the turns streaming at once leave together, a few
        produce requests a round trip rather than one per turn (the records of one key
        keep their order)."""
        topic = self.store.reply_stream.get_topic_name()
        partition = partition_for(key.decode(), self.store.settings.partitions)

        async def send(chunks: Sequence[ReplyChunk]) -> None:
            producer = steady_producer(self.store.app)
            headers = record_headers()
            sent = [
                await producer.send(topic, key, encode_reply_chunk(c), partition, None, headers)
                for c in chunks
            ]
            for delivery in sent:
                await delivery

        return send

    @property
    def _chunk_text(self) -> int:
        """The most text one chunk carries (long text takes several): well under the
        record limit, with room for the chunk's other fields."""
        return max(1024, self.store.settings.max_record_bytes // 4)

    def _stored_replies(self, key: bytes) -> RecentReplies:
        stored = self.store.replies_table.get(key)
        return stored if isinstance(stored, RecentReplies) else RecentReplies()

    async def append(self, events: Sequence[ConversationEvent]) -> TopicPosition | None:
        """Append one turn's events in order and wait until the broker has them all;
        where the last one landed (None: no events).

        They go in one record batch when they fit the record limit: the turn reaches
        the log whole or not at all, in one round trip. A larger turn takes several
        batches in order; a retried send may then repeat a batch, whose events the
        fold recognises by id.
        """
        if not events:
            return None
        key = events[0].conversation_id.encode()
        if any(e.conversation_id.encode() != key for e in events):
            raise ValueError("a turn's events belong to one conversation")
        topic = self.store.events.get_topic_name()
        return (await self._send_now(topic, key, await self._encoded(events)))[-1]

    async def _encoded(self, events: Sequence[ConversationEvent]) -> list[bytes]:
        """The events' record values: sealed under their conversation's key when the
        worker seals (the limits left each event room for it)."""
        keys = self.store.keys
        if not keys.sealing:
            return [encode_event(e) for e in events]
        key = await keys.key_for(events[0].conversation_id)
        return [encode_event(seal_event(e, key)) for e in events]

    async def publish_reply(
        self,
        reply: ChatReply,
        run_id: str | None = None,
        followed: bool = True,
        answers: str | None = None,
        turn_end: TopicPosition | None = None,
    ) -> None:
        """Publish the reply (after the turn's events and, for a streamed ``run_id``, the
        run's last chunk, named in its header) and end the local followers of its
        request (``followed``). A reply that is not final ``answers`` only the request
        record it names (in its header): a retry sent meanwhile waits for its own.
        ``turn_end``, the turn's last event, is named in a header too: the asker's next
        read waits for the snapshot to apply it (:mod:`goaicore.store.turn_ends`).

        ``reply`` is already within the record limit: fitted by the caller, or stored
        (the replies table keeps only fitted replies).
        """
        key = reply.conversation_id.encode()
        headers = [(RUN_HEADER, run_id.encode())] if run_id else []
        if answers is not None:
            headers.append((ANSWERS_HEADER, answers.encode()))
        if turn_end is not None:
            headers.append(turn_end_header(turn_end))
        await self._send_now(
            self.store.replies.get_topic_name(), key, [encode_chat_reply(reply)], headers
        )
        if followed:
            self.services.streams.finish(reply, answers, turn_end)

    async def _send_now(
        self,
        topic: str,
        key: bytes,
        values: Sequence[bytes],
        extra_headers: Sequence[tuple[str, bytes]] = (),
    ) -> list[TopicPosition]:
        """Send records under one key straight to the producer (not through Faust's
        buffer, nor tied to the current request's commit), in as few record batches as
        fit, with the current trace context in their headers; where each landed, once
        the broker has them all."""
        producer = steady_producer(self.store.app)
        headers = [*record_headers(), *extra_headers]
        records = [(key, value, headers) for value in values]
        partition = producer.key_partition(topic, key).partition
        sent = await _retrying(lambda: producer.send_batches(topic, partition, records))
        return await positions(sent)


def _decoded(value: bytes | None) -> ChatRequest | DecodeError:
    try:
        return decode_chat_request(value or b"")
    except DecodeError as err:
        return err


async def _retrying(send: Callable[[], Awaitable[T]]) -> T:
    """``send()``, tried again a few times (with growing pauses) when it raises."""
    for attempt in range(1, SEND_ATTEMPTS + 1):
        try:
            return await send()
        except Exception:
            if attempt == SEND_ATTEMPTS:
                raise
            log.warning("send failed (attempt %d of %d); retrying", attempt, SEND_ATTEMPTS)
            await asyncio.sleep(0.2 * 2**attempt)
    raise AssertionError("unreachable")
