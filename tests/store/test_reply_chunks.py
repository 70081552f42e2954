"""A streamed turn's chunks: written in batches, one in flight, and read back in order
whatever order and how many times they are read."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from hypothesis import given
from hypothesis import strategies as st

from goaicore.conversation.progress import TextDelta, ToolCallFinished, ToolCallStarted
from goaicore.records import ReplyChunk, ReplyChunkKind, new_chat_request
from goaicore.store.reply_chunks import ChunkReader, ChunkWriter
from goaicore.store.reply_streams import Restarted

REQUEST = new_chat_request("conversation-1", "hello", stream=True)


async def written(
    progress: Sequence[object], run_id: str = "run-1", text_limit: int = 1024
) -> tuple[list[list[ReplyChunk]], int]:
    """The batches a writer sends for ``progress``, and the most it had in flight."""
    batches: list[list[ReplyChunk]] = []
    in_flight = most = 0

    async def send(chunks: Sequence[ReplyChunk]) -> None:
        nonlocal in_flight, most
        in_flight += 1
        most = max(most, in_flight)
        await asyncio.sleep(0.001)  # the broker's round trip
        batches.append(list(chunks))
        in_flight -= 1

    writer = ChunkWriter(REQUEST, run_id, send, text_limit)
    for item in progress:
        writer.report(item)  # type: ignore[arg-type]
        await asyncio.sleep(0)
    await writer.end()
    return batches, most


PROGRESS = st.lists(
    st.one_of(
        st.builds(TextDelta, st.text(min_size=1, max_size=40)),
        st.builds(ToolCallStarted, st.just("call_1"), st.just("score"), st.text(max_size=20)),
        st.builds(
            ToolCallFinished,
            st.just("call_1"),
            st.just("score"),
            st.text(max_size=20),
            st.booleans(),
        ),
    ),
    max_size=30,
)


def merged(items: Sequence[object]) -> list[object]:
    """Progress with each run of text deltas joined into one (batching joins them)."""
    out: list[object] = []
    for item in items:
        if isinstance(item, TextDelta) and out and isinstance(out[-1], TextDelta):
            out[-1] = TextDelta(out[-1].text + item.text)
        else:
            out.append(item)
    return out


@given(progress=PROGRESS)
def test_what_is_written_reads_back_as_the_same_progress(progress: list[object]) -> None:
    batches, most = asyncio.run(written(progress))
    chunks = [c for batch in batches for c in batch]
    assert most == 1  # one batch in flight: the partition keeps their order
    assert [c.seq for c in chunks] == list(range(len(chunks)))
    assert chunks[0].kind is ReplyChunkKind.START
    assert chunks[-1].kind is ReplyChunkKind.END
    reader = ChunkReader(REQUEST.conversation_id, REQUEST.request_id)
    read = [item for offset, chunk in enumerate(chunks) for item in reader.read(chunk, offset)]
    assert merged(read) == merged(progress)
    assert reader.ended


@given(progress=PROGRESS, order=st.randoms(use_true_random=False), copies=st.integers(1, 3))
def test_chunks_read_out_of_order_and_twice_read_as_written(
    progress: list[object], order: object, copies: int
) -> None:
    batches, _ = asyncio.run(written(progress))
    chunks = list(enumerate(c for batch in batches for c in batch)) * copies
    order.shuffle(chunks)  # type: ignore[attr-defined]
    reader = ChunkReader(REQUEST.conversation_id, REQUEST.request_id)
    read = [item for offset, chunk in chunks for item in reader.read(chunk, offset)]
    assert merged(read) == merged(progress)


async def test_a_second_run_is_a_restart_and_the_first_one_is_dropped_after_it() -> None:
    first, _ = await written([TextDelta("one "), TextDelta("two ")], run_id="run-a")
    second, _ = await written([TextDelta("uno")], run_id="run-b")
    a = [c for batch in first for c in batch]
    b = [c for batch in second for c in batch]
    log = list(enumerate([*a, *b]))  # run b starts after run a in the log
    reader = ChunkReader(REQUEST.conversation_id, REQUEST.request_id)
    read = [
        item
        for offset, chunk in [*log[:2], *log[len(a) :], *log[2 : len(a)]]
        for item in reader.read(chunk, offset)
    ]
    assert read == [TextDelta("one two "), Restarted("run-b"), TextDelta("uno")]
    assert reader.ended
    late = ChunkReader(REQUEST.conversation_id, REQUEST.request_id)  # b read before a
    read = [
        item
        for offset, chunk in [*log[len(a) :], *log[: len(a)]]
        for item in late.read(chunk, offset)
    ]
    assert read == [TextDelta("uno")]


async def test_long_text_is_cut_into_chunks_under_the_limit() -> None:
    text = "ü" * 5000
    batches, _ = await written([TextDelta(text)], text_limit=1024)
    deltas = [c for batch in batches for c in batch if c.kind is ReplyChunkKind.DELTA]
    assert len(deltas) > 1
    assert all(len(c.text.encode()) <= 1024 for c in deltas)
    assert "".join(c.text for c in deltas) == text


async def test_a_long_tool_result_is_cut_down_on_the_stream() -> None:
    batches, _ = await written([ToolCallFinished("c", "big", "x" * 10_000)], text_limit=1024)
    [result] = [c for batch in batches for c in batch if c.kind is ReplyChunkKind.TOOL_RESULT]
    assert len(result.text.encode()) <= 1024
    assert "cut short" in result.text


async def test_a_send_that_fails_loses_chunks_not_the_turn() -> None:
    async def refuse(chunks: Sequence[ReplyChunk]) -> None:
        raise ConnectionError("the broker is gone")

    writer = ChunkWriter(REQUEST, "run-1", refuse, 1024)
    writer.report(TextDelta("hello"))
    await writer.end()  # returns: the reply goes out all the same


def test_another_requests_chunks_are_not_read() -> None:
    batches, _ = asyncio.run(written([TextDelta("mine")]))
    reader = ChunkReader(REQUEST.conversation_id, "someone-else")
    assert [reader.read(c, 0) for batch in batches for c in batch] == [[], [], []]


async def test_text_after_the_first_waits_for_the_hold_and_leaves_joined() -> None:
    landed = asyncio.Event()
    batches: list[list[ReplyChunk]] = []

    async def send(chunks: Sequence[ReplyChunk]) -> None:
        batches.append(list(chunks))
        await landed.wait()  # the broker answers when the test says

    writer = ChunkWriter(REQUEST, "run-1", send, 1024, hold=3600)
    for n in range(10):
        writer.report(TextDelta(f"a{n} "))  # the start is in flight: they wait, joined
    await asyncio.sleep(0)
    landed.set()
    await asyncio.sleep(0.01)
    for n in range(10):
        writer.report(TextDelta(f"b{n} "))  # the first text left: these wait for the hold
    writer.report(ToolCallStarted("call_1", "score", "{}"))  # leaves at once, after them
    await asyncio.sleep(0.01)
    for n in range(3):
        writer.report(TextDelta(f"c{n} "))
    await writer.end()  # what is held leaves with the end
    kinds = [[c.kind.value for c in batch] for batch in batches]
    assert kinds == [["start"], ["delta"], ["delta", "tool_call"], ["delta", "end"]]
    texts = [c.text for batch in batches for c in batch if c.kind is ReplyChunkKind.DELTA]
    assert texts == [
        "".join(f"a{n} " for n in range(10)),
        "".join(f"b{n} " for n in range(10)),
        "c0 c1 c2 ",
    ]
