"""An ask answered as Server-Sent Events, and the cancel of a running ask.

``POST /v1/conversations/{id}/messages`` with ``Accept: text/event-stream`` answers a
stream of events as the turn runs: ``delta`` (``{"text"}``), ``tool_call`` (``{"id",
"name", "arguments"}``), ``tool_result`` (``{"id", "name", "text", "is_error"}``),
``restart`` (``{"run_id"}``: the turn runs again from the start; drop the text shown so
far), then ``done`` with the reply (status ``ok`` or ``cancelled``) or ``error`` (the
error object the JSON answer would have, the reply beside it where there is one). A
comment line keeps an idle stream open through proxies. A caller who disconnects stops
following; the turn goes on and is recorded.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections import OrderedDict
from collections.abc import AsyncIterator
from typing import Any

from aiohttp import web as aioweb

from goaicore.conversation.progress import TextDelta, ToolCallFinished, ToolCallStarted
from goaicore.records import ChatReply, ReplyStatus
from goaicore.store.errors import ReplyTimeout
from goaicore.store.reply_streams import Restarted, StreamedReply
from goaicore_store.http.errors import ApiError, error_body

log = logging.getLogger(__name__)

EVENT_STREAM = "text/event-stream"
REQUEST_ID_HEADER = "X-Request-Id"
STREAM_HEADERS = ("Content-Type", "Cache-Control", "X-Accel-Buffering", REQUEST_ID_HEADER)
"""The headers of a streamed answer, passed on by a worker that forwards it."""
KEEP_ALIVE_SECONDS = 15.0
"""An idle stream sends a comment this often, so proxies keep it open."""
ASKS_KEPT = 8192
"""Request ids asked through this worker, with their conversation (for a cancel)."""


def wants_stream(request: aioweb.Request) -> bool:
    """The caller asked for Server-Sent Events."""
    return EVENT_STREAM in request.headers.get("Accept", "")


def sse(event: str, data: Any) -> bytes:
    """One Server-Sent Event (JSON data on one line)."""
    return f"event: {event}\ndata: {json.dumps(data, ensure_ascii=False)}\n\n".encode()


def event_of(item: StreamedReply, reply_json: Any) -> bytes:
    """The event for one item of a streamed ask (``reply_json`` renders a reply)."""
    if isinstance(item, TextDelta):
        return sse("delta", {"text": item.text})
    if isinstance(item, ToolCallStarted):
        return sse(
            "tool_call", {"id": item.call_id, "name": item.name, "arguments": item.arguments}
        )
    if isinstance(item, ToolCallFinished):
        data = {"id": item.call_id, "name": item.name, "text": item.text, "is_error": item.is_error}
        return sse("tool_result", data)
    if isinstance(item, Restarted):
        return sse("restart", {"run_id": item.run_id})
    done = item.status in (ReplyStatus.OK, ReplyStatus.CANCELLED)
    return sse("done" if done else "error", reply_json(item))


async def answer_stream(
    request: aioweb.Request,
    items: AsyncIterator[StreamedReply],
    reply_json: Any,
    timeout: float,  # noqa: ASYNC109 - the ask's, for the error's message
    request_id: str,
) -> aioweb.StreamResponse:
    """Send ``items`` as they come; the answer is 200 once the stream has begun, so a
    failure after that is an ``error`` event."""
    response = aioweb.StreamResponse(
        headers={
            "Content-Type": EVENT_STREAM,
            "Cache-Control": "no-cache",
            "X-Accel-Buffering": "no",  # nginx: pass each event on at once
            REQUEST_ID_HEADER: request_id,
        }
    )
    await response.prepare(request)
    pending: asyncio.Task[StreamedReply] | None = None
    try:
        while True:
            pending = pending or asyncio.ensure_future(anext(items))
            done, _ = await asyncio.wait({pending}, timeout=KEEP_ALIVE_SECONDS)
            if not done:
                await response.write(b": waiting\n\n")
                continue
            item, pending = pending.result(), None
            await response.write(event_of(item, reply_json))
            if isinstance(item, ChatReply):
                break
    except StopAsyncIteration:
        pass
    except ReplyTimeout as err:
        body = error_body(
            504,
            f"no reply in {timeout:g} s; ask again with the same request_id",
            request_id=err.request_id,
            retry_same_id=True,
        )
        await _write_quietly(response, sse("error", body))
    except ApiError as err:
        body = error_body(err.status, err.message, err.error_type, **err.extra)
        await _write_quietly(response, sse("error", body))
    except ConnectionError:
        return response  # the caller left: the turn goes on without it
    except Exception:  # the stream has begun: a failure is its last event
        log.exception("streamed ask %s failed", request_id)
        body = error_body(
            500,
            "the stream failed; ask again with the same request_id",
            request_id=request_id,
            retry_same_id=True,
        )
        await _write_quietly(response, sse("error", body))
    finally:
        if pending is not None:
            pending.cancel()
            await asyncio.wait((pending,))
        with contextlib.suppress(Exception):
            await items.aclose()  # type: ignore[attr-defined]
    await _write_quietly(response, None)
    return response


async def _write_quietly(response: aioweb.StreamResponse, data: bytes | None) -> None:
    """Write ``data`` (None: the end of the stream), unless the caller has left."""
    with contextlib.suppress(ConnectionError):
        if data is None:
            await response.write_eof()
        else:
            await response.write(data)


class AskedHere:
    """Request ids asked through this worker, newest kept: a cancel by request id alone
    finds its conversation."""

    def __init__(self) -> None:
        self._asked: OrderedDict[str, str] = OrderedDict()

    def add(self, request_id: str, conversation_id: str) -> None:
        self._asked[request_id] = conversation_id
        self._asked.move_to_end(request_id)
        while len(self._asked) > ASKS_KEPT:
            self._asked.popitem(last=False)

    def conversation_of(self, request_id: str) -> str | None:
        return self._asked.get(request_id)
