"""The chat client's reply listener outlives a failed read while the broker is away."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

import pytest
from aiokafka.errors import NodeNotReadyError, TopicAuthorizationFailedError  # type: ignore[import-untyped]

from goaicore.clients import AsyncChatClient
from goaicore.clients.aio.chat_client import _Asked
from goaicore.config import Settings
from goaicore.errors import BrokerError
from goaicore.records import ChatReply, ReplyStatus
from goaicore.records.avro.api import encode_chat_reply


@dataclass
class Record:
    value: bytes
    headers: tuple[tuple[str, bytes], ...] = ()
    topic: str = "replies"
    partition: int = 0
    offset: int = 0


class Consumer:
    """Reads as a consumer does while the broker is away (``failures``), then a reply."""

    def __init__(self, failures: list[Exception], reply: ChatReply) -> None:
        self.failures = failures
        self.reply = reply

    async def getmany(self, timeout_ms: int) -> dict[Any, list[Record]]:
        await asyncio.sleep(0)
        if self.failures:
            raise self.failures.pop(0)
        reply, self.reply = self.reply, None  # type: ignore[assignment]
        return {0: [Record(encode_chat_reply(reply))]} if reply is not None else {}


async def _listened(failure: Exception) -> asyncio.Future[ChatReply]:
    reply = ChatReply(request_id="r1", conversation_id="c", status=ReplyStatus.OK, text="hi")
    client = AsyncChatClient(Settings(env={}, bootstrap_servers="127.0.0.1:9"))
    client._consumer = Consumer([failure, failure], reply)
    future: asyncio.Future[ChatReply] = asyncio.get_running_loop().create_future()
    client._pending["r1"] = [_Asked(future)]
    listener = asyncio.create_task(client._listen())
    await asyncio.wait({future}, timeout=30)  # the reply, or the listener's failure
    listener.cancel()
    return future


async def test_a_read_failed_for_the_brokers_absence_is_tried_again() -> None:
    future = await _listened(NodeNotReadyError())
    assert future.result().text == "hi"


async def test_any_other_failure_stops_the_listener_and_fails_its_asks() -> None:
    future = await _listened(TopicAuthorizationFailedError())
    with pytest.raises(BrokerError, match="the reply listener failed"):
        future.result()
