"""Who takes a request's reply: every follower for a final one; for one that is not final
(a request whose deadline passed before it ran), only the follower that sent the record it
names, or one that joined the run; a retry sent meanwhile waits for its own."""

from __future__ import annotations

import asyncio

import pytest

from goaicore.records import ChatReply, ReplyStatus
from goaicore.store.reply_streams import ReplyStreams, request_at

LATE = ChatReply(request_id="r", conversation_id="c", status=ReplyStatus.TIMEOUT, error="late")
ANSWERED = ChatReply(request_id="r", conversation_id="c", status=ReplyStatus.OK, text="hi")


async def test_a_late_reply_goes_to_its_own_sender_and_the_retry_waits_for_its_answer() -> None:
    streams = ReplyStreams()
    original, retry, joined = (streams.follow("c", "r") for _ in range(3))
    original.sent_at, retry.sent_at = request_at(0, 7), request_at(0, 9)
    joined.joined = True
    run = streams.start("c", "r")
    streams.finish(LATE, answers=request_at(0, 7))
    streams.forget(run)  # the late run is over: nobody is told it was abandoned
    assert await original.next(asyncio.get_running_loop().time() + 1) == LATE
    assert await joined.next(asyncio.get_running_loop().time() + 1) == LATE
    with pytest.raises(TimeoutError):
        await retry.next(asyncio.get_running_loop().time() + 0.2)
    assert not streams.running("c", "r")
    streams.start("c", "r")  # the retry's own run: no restart for its follower
    streams.finish(ANSWERED)
    assert await retry.next(asyncio.get_running_loop().time() + 1) == ANSWERED


async def test_a_late_reply_whose_sender_is_not_known_yet_is_left_to_its_timeout() -> None:
    streams = ReplyStreams()
    sending = streams.follow("c", "r")  # its record's acknowledgement has not come back
    streams.finish(LATE, answers=request_at(2, 0))
    with pytest.raises(TimeoutError):
        await sending.next(asyncio.get_running_loop().time() + 0.2)
    streams.finish(ANSWERED)
    assert await sending.next(asyncio.get_running_loop().time() + 1) == ANSWERED


async def test_a_final_reply_goes_to_every_follower() -> None:
    streams = ReplyStreams()
    first, second = streams.follow("c", "r"), streams.follow("c", "r")
    first.sent_at, second.sent_at = request_at(0, 1), request_at(0, 2)
    streams.finish(ANSWERED)
    for following in (first, second):
        assert await following.next(asyncio.get_running_loop().time() + 1) == ANSWERED
