"""HTTP on the worker's Faust web server: ask, append events, read a snapshot.

- ``POST /conversations/{id}/messages`` ``{"text": ..., "system"?, "tools"?, "model"?,
  "timeout"?, "request_id"?}``: publishes a ChatRequest and answers with its reply;
- ``POST /conversations/{id}/events`` ``{"text": ..., "type"?: "game"|"user",
  "kind"?, "attributes"?}``: appends an event and answers with its log position;
- ``GET /conversations/{id}``: the conversation's snapshot;
- ``GET /health``: liveness, 200 while the worker's event loop answers;
- ``GET /ready``: readiness, 200 once the worker has its partitions and has recovered
  its tables, 503 with the reason before that and during a rebalance.

The snapshot and the ask are served by the worker that owns the conversation
(Faust's router finds it from the partition assignment); any worker forwards
to it. Every error is JSON ``{"error": ...}`` with a fitting status.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Mapping
from datetime import timedelta
from typing import TYPE_CHECKING, Any, cast

from aiohttp import web as aioweb
from faust import web

from goaicore.errors import InputError
from goaicore.records import (
    ChatReply,
    GameEvent,
    ReplyStatus,
    UserMessage,
    new_chat_request,
    new_event,
    utc_now,
)
from goaicore.records.avro.api import encode_chat_request, encode_event
from goaicore.records.avro.errors import EncodeError
from goaicore.records.jsonable import jsonable
from goaicore.records.types import EventBody
from goaicore.records.validation import (
    InvalidInputError,
    check_attributes,
    check_conversation_id,
    check_size,
    check_text,
)

if TYPE_CHECKING:
    from goaicore_store.topology import StoreApp

log = logging.getLogger(__name__)

DEFAULT_TIMEOUT = 60.0
MAX_TIMEOUT = 600.0
HTTP_STATUS = {
    ReplyStatus.OK: 200,
    ReplyStatus.REJECTED: 422,
    ReplyStatus.TIMEOUT: 504,
    ReplyStatus.ERROR: 502,
}


class BadInput(InputError):
    """The caller's request is wrong; ``status`` and the message go back as JSON."""

    def __init__(self, message: str, status: int = 400) -> None:
        super().__init__(message)
        self.status = status


HEALTH_PATH = "/health"
READY_PATH = "/ready"


def readiness(app: Any) -> str | None:
    """None when the worker can serve its partitions, else why not.

    Faust sets ``rebalancing`` when a rebalance starts and clears it only after table
    recovery, so "assigned at least once and not rebalancing" means the tables are
    current. A worker with no active partitions (more workers than partitions) is
    ready: it serves by forwarding to the owners.
    """
    if app.rebalancing_count == 0:
        return "waiting for the first partition assignment"
    if app.rebalancing:
        return "rebalancing: partitions are being assigned or tables recovered"
    if not app.tables.recovery.completed.is_set():
        return "recovering tables"
    return None


def register_views(store: StoreApp) -> None:
    """Add the views to the store app's web server."""
    app = store.app
    limit = store.settings.max_record_bytes

    @app.page(HEALTH_PATH)
    class Health(web.View):
        """Liveness: the process and its event loop answer (a crashed Faust app exits)."""

        async def get(self, request: web.Request) -> web.Response:
            return self.json({"status": "ok"})

    @app.page(READY_PATH)
    class Ready(web.View):
        """Readiness: partitions assigned and tables recovered; 503 with the reason until then."""

        async def get(self, request: web.Request) -> web.Response:
            reason = readiness(app)
            if reason is not None:
                return self.json({"status": "not ready", "reason": reason}, status=503)
            return self.json({"status": "ready"})

    async def read_body(faust_request: web.Request) -> bytes:
        request = cast(aioweb.Request, faust_request)
        if request.content_length is not None and request.content_length > limit:
            raise BadInput(f"the body is {request.content_length:,} bytes; at most {limit:,}", 413)
        try:
            raw = await request.read()
        except aioweb.HTTPRequestEntityTooLarge:
            raise BadInput(f"the body is too large; at most {limit:,} bytes", 413) from None
        if len(raw) > limit:
            raise BadInput(f"the body is {len(raw):,} bytes; at most {limit:,}", 413)
        return raw

    def conversation(raw: str) -> str:
        try:
            return check_conversation_id(raw)
        except InvalidInputError as err:
            raise BadInput(str(err)) from None

    @app.page("/conversations/{conversation_id}")
    class Conversation(web.View):
        """The snapshot of one conversation, from the worker that owns it."""

        @app.table_route(table=store.table, match_info="conversation_id")  # type: ignore[arg-type]
        async def get(self, request: web.Request, conversation_id: str) -> web.Response:
            try:
                key = conversation(conversation_id).encode()
            except BadInput as err:
                return self.error(err.status, str(err))
            snapshot = store.table.get(key)
            if snapshot is None:
                return self.error(404, f"no conversation {conversation_id!r}")
            return self.json(jsonable(snapshot))

    @app.page("/conversations/{conversation_id}/events")
    class Events(web.View):
        """Append a game event or a user message to a conversation's log."""

        async def post(self, request: web.Request, conversation_id: str) -> web.Response:
            try:
                conversation_id = conversation(conversation_id)
                body = parse_json(await read_body(request))
                event = new_event(conversation_id, event_body(body), source="http")
                payload = check_size("event", encode_event(event), limit)
            except BadInput as err:
                return self.error(err.status, str(err))
            except (InvalidInputError, EncodeError) as err:
                return self.error(400, str(err))
            sent = await store.events.send(key=conversation_id.encode(), value=payload, force=True)
            metadata = await sent
            return self.json(
                {
                    "event_id": event.event_id,
                    "partition": metadata.partition,
                    "offset": metadata.offset,
                },
                status=201,
            )

    @app.page("/conversations/{conversation_id}/messages")
    class Messages(web.View):
        """Ask: publish a chat request and answer with its reply."""

        async def post(self, request: web.Request, conversation_id: str) -> web.Response:
            try:
                conversation_id = conversation(conversation_id)
                raw = await read_body(request)
            except BadInput as err:
                return self.error(err.status, str(err))
            forwarded = await forward_to_owner(store, request, conversation_id, raw)
            if forwarded is not None:
                return forwarded
            try:
                return await ask(self, store, conversation_id, parse_json(raw))
            except BadInput as err:
                return self.error(err.status, str(err))
            except (InvalidInputError, EncodeError) as err:
                return self.error(400, str(err))


async def ask(
    view: web.View, store: StoreApp, conversation_id: str, body: Mapping[str, Any]
) -> web.Response:
    """Publish the request, wait for the reply this worker's chat agent publishes."""
    timeout = _number(body, "timeout", DEFAULT_TIMEOUT)
    if not 0 < timeout <= MAX_TIMEOUT:
        raise BadInput(f"timeout must be more than 0 and at most {MAX_TIMEOUT:g} seconds")
    tools = body.get("tools", [])
    if not isinstance(tools, list) or not all(isinstance(t, str) for t in tools):
        raise BadInput("tools must be a list of tool names")
    request = new_chat_request(
        conversation_id,
        _text(body, "text"),
        system=_optional_text(body, "system"),
        tools=tools,
        model=_optional_text(body, "model"),
        deadline=utc_now() + timedelta(seconds=timeout),
        request_id=_optional_text(body, "request_id"),
    )
    payload = check_size(
        "chat request", encode_chat_request(request), store.settings.max_record_bytes
    )
    waiters = store.chat.waiters
    waiting = waiters.expect(request.request_id)
    try:
        sent = await store.requests.send(key=conversation_id.encode(), value=payload, force=True)
        await sent
        reply = await asyncio.wait_for(asyncio.shield(waiting), timeout + 1.0)
    except TimeoutError:
        return view.error(
            504, f"no reply in {timeout:g} s", request_id=request.request_id, retry_same_id=True
        )
    finally:
        waiters.forget(request.request_id)
    return view.json(reply_json(reply), status=HTTP_STATUS.get(reply.status, 502))


async def forward_to_owner(
    store: StoreApp, request: web.Request, conversation_id: str, body: bytes
) -> web.Response | None:
    """The owner's answer when another worker owns the conversation, else None."""
    app = store.app
    try:
        owner = app.router.key_store(store.table.name, conversation_id)
    except KeyError:
        return _error(503, "partitions are not assigned yet; retry")
    here = app.conf.canonical_url
    if (owner.host, owner.port) == (here.host, here.port):
        return None
    url = request.url.with_host(owner.host or "127.0.0.1").with_port(owner.port)
    headers = {"Content-Type": request.headers.get("Content-Type", "application/json")}
    async with app.http_client.post(url, data=body, headers=headers) as answer:
        response = aioweb.Response(
            body=await answer.read(), status=answer.status, content_type=answer.content_type
        )
    return cast(web.Response, response)


def parse_json(raw: bytes) -> dict[str, Any]:
    """A JSON object body, or BadInput saying what is wrong with it."""
    try:
        body = json.loads(raw)
    except ValueError as err:
        raise BadInput(f"the body is not valid JSON: {err}") from None
    if not isinstance(body, dict):
        raise BadInput("the body must be a JSON object")
    return body


def _error(status: int, message: str) -> web.Response:
    return cast(web.Response, aioweb.json_response({"error": message}, status=status))


def event_body(body: Mapping[str, Any]) -> EventBody:
    """The event a POST /events body describes."""
    kind = body.get("type", "game")
    text = _text(body, "text")
    if kind == "user":
        return UserMessage(text=text)
    if kind == "game":
        attributes = body.get("attributes")
        try:
            checked = check_attributes(attributes)
        except InvalidInputError as err:
            raise BadInput(str(err)) from None
        return GameEvent(kind=_optional_text(body, "kind") or "game", text=text, attributes=checked)
    raise BadInput(f"type must be 'game' or 'user', not {kind!r}")


def _text(body: Mapping[str, Any], name: str) -> str:
    if name not in body:
        raise BadInput(f"{name} is missing")
    try:
        return check_text(name, body[name])
    except InvalidInputError as err:
        raise BadInput(str(err)) from None


def _optional_text(body: Mapping[str, Any], name: str) -> str | None:
    value = body.get(name)
    if value is None:
        return None
    if not isinstance(value, str):
        raise BadInput(f"{name} must be a string, got {type(value).__name__}")
    return value


def _number(body: Mapping[str, Any], name: str, default: float) -> float:
    value = body.get(name, default)
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise BadInput(f"{name} must be a number, got {type(value).__name__}")
    return float(value)


def reply_json(reply: ChatReply) -> dict[str, Any]:
    data: dict[str, Any] = jsonable(reply)
    return data
