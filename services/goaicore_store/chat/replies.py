"""Local waiters for replies: an HTTP request waits here for the chat agent's answer.

The chat agent of the same worker resolves the waiter when it publishes the
reply, so ``POST /v1/conversations/{id}/messages`` needs no consumer of its own.
The view sends the request to the worker that owns the conversation, so the
agent that answers is the one in the waiting process.
"""

from __future__ import annotations

import asyncio

from goaicore.records import ChatReply


class ReplyWaiters:
    """Futures by request id, resolved once with the request's reply."""

    def __init__(self) -> None:
        self._waiting: dict[str, asyncio.Future[ChatReply]] = {}

    def expect(self, request_id: str) -> asyncio.Future[ChatReply]:
        """A future for the reply to ``request_id``; call before sending the request."""
        future = self._waiting.get(request_id)
        if future is None or future.done():
            future = asyncio.get_running_loop().create_future()
            self._waiting[request_id] = future
        return future

    def forget(self, request_id: str) -> None:
        self._waiting.pop(request_id, None)

    def resolve(self, reply: ChatReply) -> None:
        future = self._waiting.pop(reply.request_id, None)
        if future is not None and not future.done():
            future.set_result(reply)
