"""The HTTP API, version 1, on the worker's web server (its OpenAPI 3.1 document is
``openapi.json`` beside this module, served at ``/v1/openapi.json``):

- ``POST /v1/conversations/{id}/messages`` ``{"text", "system"?, "tools"?, "model"?,
  "timeout"?, "request_id"?}``: publishes a ChatRequest and answers with its reply, or
  (``Accept: text/event-stream``) with the turn's progress as Server-Sent Events, then
  the reply (``goaicore_store.http.streaming``);
- ``DELETE /v1/requests/{request_id}`` (``?conversation_id=`` where it was not asked
  through a worker of this deployment): stop the running turn of a request;
- ``POST /v1/conversations/{id}/events`` ``{"text", "type"?: "game"|"user", "kind"?,
  "attributes"?}``: appends an event and answers with its log position;
- ``GET /v1/conversations/{id}``: the conversation's snapshot;
- ``DELETE /v1/conversations/{id}`` ``{"reason"?}``: delete the conversation (a
  ConversationDeleted event: its history and metadata leave the snapshot, the log
  keeps its events);
- ``GET /health`` (liveness) and ``GET /ready`` (partitions assigned, tables
  recovered): open without a token, for probes;
- ``GET /metrics``: Prometheus metrics (a token, like the API).

Every view is a thin adapter over the worker's conversation store
(``goaicore_store.port``). The snapshot and the ask are served by the worker that owns
the conversation; any worker forwards to it (once: a request signed as forwarded by a
worker, see ``goaicore_store.http.peers``, is never forwarded again; a client's
forwarding header is ignored). An owner that cannot be reached is a 503 with
``Retry-After``, until its partitions are assigned to a worker that answers.
"""

from __future__ import annotations

import contextlib
import json
import logging
from collections.abc import AsyncIterator, Awaitable
from functools import cache
from importlib.resources import files
from typing import TYPE_CHECKING, Any, cast

import aiohttp
import yarl
from aiohttp import web as aioweb
from faust import web

from goaicore.errors import InputError
from goaicore.records import (
    ChatReply,
    GameEvent,
    ReplyStatus,
    TopicPosition,
    UserMessage,
    new_id,
)
from goaicore.records.jsonable import jsonable
from goaicore.records.types import EventBody
from goaicore.records.validation import check_conversation_id, check_request_id
from goaicore.store.errors import ReplyTimeout
from goaicore.store.reply_streams import StreamedReply
from goaicore.store.turns import DELETED, ERASED, refusal_of
from goaicore.tracing import record_headers
from goaicore_store.http import bodies
from goaicore_store.http.auth import HEALTH_PATH, READY_PATH
from goaicore_store.http.errors import ERROR_TYPES, ApiError, error_body
from goaicore_store.http.operations import store_errors
from goaicore_store.http.peers import FORWARDED, ForwardSigner
from goaicore_store.http.streaming import (
    EVENT_STREAM,
    STREAM_HEADERS,
    AskedHere,
    answer_stream,
    wants_stream,
)

if TYPE_CHECKING:
    from goaicore.store.port import ConversationStore
    from goaicore_store.topology import StoreApp

log = logging.getLogger(__name__)

API = "/v1"
OPENAPI_PATH = f"{API}/openapi.json"
METRICS_PATH = "/metrics"
CONVERSATION_PATH = f"{API}/conversations/{{conversation_id}}"
REQUEST_PATH = f"{API}/requests/{{request_id}}"
FORWARD_RETRY_AFTER = 5
"""Seconds a caller is told to wait when the owner of its conversation cannot be reached:
its partitions go to another worker once the group notices it is gone."""
DEFAULT_TIMEOUT = 60.0
MAX_TIMEOUT = 600.0
HTTP_STATUS = {
    ReplyStatus.OK: 200,
    ReplyStatus.CANCELLED: 200,  # what the caller asked for: the text generated until then
    ReplyStatus.REJECTED: 422,
    ReplyStatus.TIMEOUT: 504,
    ReplyStatus.ERROR: 502,
}
REFUSED_STATUS = {DELETED: 409, ERASED: 410}
"""A rejected reply that refuses by the conversation's state: deleted (a conflict with
it), or a retry whose reply was erased with the conversation's content (gone)."""


def reply_status(reply: ChatReply) -> int:
    """The HTTP status a reply is answered with."""
    refusal = refusal_of(reply)
    if refusal is not None:
        return REFUSED_STATUS[refusal]
    return HTTP_STATUS.get(reply.status, 502)


@cache
def openapi_document() -> dict[str, Any]:
    """The committed OpenAPI document, as served."""
    document: dict[str, Any] = json.loads(
        files("goaicore_store.http").joinpath("openapi.json").read_text()
    )
    return document


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


def json_answer(data: Any, status: int = 200) -> web.Response:
    return cast(web.Response, aioweb.json_response(data, status=status))


def position_answer(position: TopicPosition) -> web.Response:
    """Where an appended event landed (the document's EventPosition)."""
    return json_answer({"partition": position.partition, "offset": position.offset})


DELETE_FIELDS = ("reason",)


def register_views(store: StoreApp, port: ConversationStore) -> None:
    """Add the views to the store app's web server."""
    app = store.app
    limit = store.settings.max_record_bytes
    asked = AskedHere()

    @app.page(HEALTH_PATH)
    class Health(web.View):
        """Liveness: the process and its event loop answer (a crashed Faust app exits)."""

        async def get(self, request: web.Request) -> web.Response:
            return json_answer({"status": "ok"})

    @app.page(READY_PATH)
    class Ready(web.View):
        """Readiness: partitions assigned and tables recovered; 503 with the reason until then."""

        async def get(self, request: web.Request) -> web.Response:
            reason = readiness(app)
            if reason is not None:
                return json_answer({"status": "not ready", "reason": reason}, status=503)
            return json_answer({"status": "ready"})

    @app.page(METRICS_PATH)
    class Metrics(web.View):
        """Prometheus metrics: goaicore's and faust-streaming's (docs/operations.md)."""

        async def get(self, request: web.Request) -> web.Response:
            response = aioweb.Response(body=store.metrics.expose())
            response.content_type = "text/plain"
            response.charset = "utf-8"
            return cast(web.Response, response)

    @app.page(OPENAPI_PATH)
    class OpenApi(web.View):
        """This API's OpenAPI 3.1 description."""

        async def get(self, request: web.Request) -> web.Response:
            return json_answer(openapi_document())

    @app.page(CONVERSATION_PATH)
    class Conversation(web.View):
        """The snapshot of one conversation, from the worker that owns it."""

        async def get(self, request: web.Request, conversation_id: str) -> web.Response:
            conversation_id = valid_conversation(conversation_id)
            forwarded = await forward_to_owner(store, request, conversation_id, b"")
            if forwarded is not None:
                return forwarded
            with store_errors():
                snapshot = (await port.read(conversation_id, history=False)).snapshot
            if snapshot is None:
                raise ApiError(404, f"no conversation {conversation_id!r}")
            return json_answer(jsonable(snapshot))

        async def delete(self, request: web.Request, conversation_id: str) -> web.Response:
            conversation_id = valid_conversation(conversation_id)
            body = bodies.json_object(await read_body(request, limit) or b"{}", DELETE_FIELDS)
            reason = bodies.optional_text(body, "reason") or ""
            with store_errors():
                position = await port.delete(conversation_id, reason)
            return position_answer(position)

    @app.page(f"{CONVERSATION_PATH}/events")
    class Events(web.View):
        """Append a game event or a user message to a conversation's log."""

        async def post(self, request: web.Request, conversation_id: str) -> web.Response:
            conversation_id = valid_conversation(conversation_id)
            raw = await read_body(request, limit)
            body = bodies.json_object(raw, bodies.EVENT_FIELDS)
            event = event_body(body)
            if store.keys.sealing:  # sealed by the owner, the one writer of its key
                forwarded = await forward_to_owner(store, request, conversation_id, raw or b"")
                if forwarded is not None:
                    return forwarded
            with store_errors():
                appended = await port.append(conversation_id, event)
            return json_answer(
                {
                    "event_id": appended.event_id,
                    "partition": appended.position.partition,
                    "offset": appended.position.offset,
                },
                status=201,
            )

    @app.page(f"{CONVERSATION_PATH}/messages")
    class Messages(web.View):
        """Ask: publish a chat request and answer with its reply."""

        async def post(self, request: web.Request, conversation_id: str) -> web.Response:
            conversation_id = valid_conversation(conversation_id)
            raw = await read_body(request, limit)
            body = bodies.json_object(raw, bodies.MESSAGE_FIELDS)
            streamed = wants_stream(cast(aioweb.Request, request))
            request_id = bodies.optional_request_id(body)
            if streamed and request_id is None:  # named now: the caller can cancel or rejoin
                request_id = body["request_id"] = new_id()
                raw = json.dumps(body).encode()
            if request_id is not None:
                asked.add(request_id, conversation_id)
            forwarded = await forward_to_owner(store, request, conversation_id, raw)
            if forwarded is not None:
                return forwarded
            if streamed:
                return await ask_streamed(request, port, conversation_id, body)
            return await ask(port, conversation_id, body)

    @app.page(REQUEST_PATH)
    class Requests(web.View):
        """Cancel: stop a request's running turn, which ends (recorded) with what it
        generated so far."""

        async def delete(self, request: web.Request, request_id: str) -> web.Response:
            request_id = valid_request_id(request_id)
            query = cast(aioweb.Request, request).query
            unknown = sorted(set(query) - {"conversation_id"})
            if unknown:  # refused, as an unknown body field is: a misspelling would go unseen
                names = ", ".join(repr(name) for name in unknown)
                raise ApiError(
                    400, f"unknown query parameter {names}; the one known is conversation_id"
                )
            given = query.get("conversation_id")
            conversation_id = valid_conversation(given) if given is not None else None
            conversation_id = conversation_id or asked.conversation_of(request_id)
            if conversation_id is None:
                if await cancel_on_peers(store, request):
                    return json_answer({"request_id": request_id, "cancel": "sent"}, 202)
                raise ApiError(
                    404,
                    f"request {request_id!r} was not asked through this deployment's "
                    "workers lately: give its conversation_id",
                )
            with store_errors():
                await port.cancel(conversation_id, request_id)
            answer = {"request_id": request_id, "conversation_id": conversation_id}
            return json_answer({**answer, "cancel": "sent"}, 202)


async def ask_streamed(
    request: web.Request, port: ConversationStore, conversation_id: str, body: dict[str, Any]
) -> web.Response:
    """Ask the store and answer its progress as Server-Sent Events (see
    ``goaicore_store.http.streaming``); bad input is still a JSON error. The request's
    id is in the ``X-Request-Id`` header, to cancel or rejoin it."""
    timeout = ask_timeout(body)
    request_id = bodies.optional_request_id(body) or new_id()
    with store_errors():
        items = port.ask_stream(
            conversation_id,
            bodies.text(body, "text"),
            system=bodies.optional_text(body, "system"),
            tools=bodies.names(body, "tools"),
            model=bodies.optional_text(body, "model"),
            request_id=request_id,
            timeout=timeout,
        )
    response = await answer_stream(
        cast(aioweb.Request, request), store_errors_of(items), reply_json, timeout, request_id
    )
    return cast(web.Response, response)


async def store_errors_of(items: AsyncIterator[StreamedReply]) -> AsyncIterator[StreamedReply]:
    """``items``, with the store's errors raised while they come as the API's."""
    try:
        with store_errors():
            async for item in items:
                yield item
    finally:
        await items.aclose()  # type: ignore[attr-defined]


async def cancel_on_peers(store: StoreApp, request: web.Request) -> bool:
    """Send a cancel the worker cannot place to every other worker once (each knows the
    requests asked through it); True when one of them took it."""
    if forwarded_by_a_worker(store, request):
        return False
    app = store.app
    for host in app.router.tables_metadata():
        url = url_at(store, request, yarl.URL(host))
        if url is None:
            continue
        headers = forwarded_headers(store, request, url)
        try:
            async with app.http_client.delete(url, headers=headers) as answer:
                if answer.status == 202:
                    return True
        except (aiohttp.ClientError, OSError):
            continue  # a worker gone away knows no request any more
    return False


def url_at(store: StoreApp, request: web.Request, worker: yarl.URL) -> yarl.URL | None:
    """``request``'s URL at another ``worker``; None when ``worker`` is this one."""
    here = store.app.conf.canonical_url
    if (worker.host, worker.port) == (here.host, here.port):
        return None
    return request.url.with_host(worker.host or "127.0.0.1").with_port(worker.port)


def forwarded_headers(store: StoreApp, request: web.Request, url: yarl.URL) -> dict[str, str]:
    """The headers a request takes to another worker at ``url``: signed as forwarded by
    a worker (served where it lands), with the caller's token, what it sends and
    accepts, and the trace it is served in (the caller's, else the one this worker
    began); nothing else the caller sent goes along."""
    headers = {FORWARDED: ForwardSigner(store.settings).sign(request.method, url.path)}
    for name in ("Authorization", "Content-Type", "Accept"):
        if name in request.headers:
            headers[name] = request.headers[name]
    headers.update((name, value.decode()) for name, value in record_headers())
    return headers


def forwarded_by_a_worker(store: StoreApp, request: web.Request) -> bool:
    """True when another worker forwarded ``request`` (its signature holds); a client's
    forwarding header, signed by no worker, is ignored."""
    value = request.headers.get(FORWARDED)
    if value is None:
        return False
    path = cast(aioweb.Request, request).path
    return ForwardSigner(store.settings).verifies(value, request.method, path)


def valid_request_id(raw: str) -> str:
    """A request id from a path, or a 400 saying why not."""
    try:
        return check_request_id(raw)
    except InputError as err:
        raise ApiError(400, str(err)) from None


async def read_body(faust_request: web.Request, limit: int) -> bytes:
    """The raw body, refused with a 413 past ``limit`` bytes (before reading it, if it says)."""
    request = cast(aioweb.Request, faust_request)
    if request.content_length is not None and request.content_length > limit:
        raise ApiError(413, f"the body is {request.content_length:,} bytes; at most {limit:,}")
    try:
        raw = await request.read()
    except aioweb.HTTPRequestEntityTooLarge:
        raise ApiError(413, f"the body is too large; at most {limit:,} bytes") from None
    if len(raw) > limit:
        raise ApiError(413, f"the body is {len(raw):,} bytes; at most {limit:,}")
    return raw


def valid_conversation(raw: str, field: str | None = None) -> str:
    """A conversation id from a path (or the body's ``field``), or a 400 saying why not."""
    try:
        return check_conversation_id(raw)
    except InputError as err:
        if field:
            raise ApiError(400, str(err), field=field) from None
        raise ApiError(400, str(err)) from None


def ask_timeout(body: dict[str, Any]) -> float:
    """How long an ask waits for its reply: the body's ``timeout``, checked."""
    timeout = bodies.number(body, "timeout", DEFAULT_TIMEOUT)
    if not 0 < timeout <= MAX_TIMEOUT:
        raise ApiError(
            400, f"timeout must be more than 0 and at most {MAX_TIMEOUT:g} seconds", field="timeout"
        )
    return timeout


async def ask(port: ConversationStore, conversation_id: str, body: dict[str, Any]) -> web.Response:
    """Ask the store; the reply is this worker's chat agent's (the owner's)."""
    timeout = ask_timeout(body)
    text = bodies.text(body, "text")
    system = bodies.optional_text(body, "system")
    tools = bodies.names(body, "tools")
    model = bodies.optional_text(body, "model")
    request_id = bodies.optional_request_id(body)
    asking = port.ask(
        conversation_id,
        text,
        system=system,
        tools=tools,
        model=model,
        request_id=request_id,
        timeout=timeout,
    )
    return await answered(asking, timeout)


async def regenerate(
    port: ConversationStore, conversation_id: str, body: dict[str, Any]
) -> web.Response:
    """The store's regenerate (one request carrying the undo), answered as an ask."""
    timeout = ask_timeout(body)
    return await answered(port.regenerate(conversation_id, timeout=timeout), timeout)


async def answered(
    asking: Awaitable[ChatReply],
    timeout: float,  # noqa: ASYNC109 - the ask's, for the 504's message
) -> web.Response:
    """The reply ``asking`` gives, as the API answers it (a store's refusal as its error,
    no reply in time as a 504 naming the request id to ask again with)."""
    try:
        with store_errors():
            reply = await asking
    except ReplyTimeout as err:
        raise ApiError(
            504,
            f"no reply in {timeout:g} s; ask again with the same request_id",
            request_id=err.request_id,
            retry_same_id=True,
        ) from None
    return json_answer(reply_json(reply), status=reply_status(reply))


def reply_json(reply: ChatReply) -> dict[str, Any]:
    """An ok or cancelled reply as it is; any other as an error object, with the whole
    reply beside it."""
    data: dict[str, Any] = jsonable(reply)
    status = reply_status(reply)
    if status == 200:
        return data
    message = reply.error or reply.status.value
    answer: dict[str, Any] = error_body(
        status, message, ERROR_TYPES.get(status), request_id=reply.request_id
    )
    answer["reply"] = data
    return answer


async def forward_to_owner(
    store: StoreApp, request: web.Request, conversation_id: str, body: bytes
) -> web.Response | None:
    """The owner's answer when another worker owns the conversation, else None.

    The caller's Authorization goes along; a request a worker forwarded is served where
    it lands (during a rebalance two workers may disagree). An owner that cannot be
    reached (it stopped, and its partitions are not yet another worker's) is a 503 with
    ``Retry-After``: nothing was sent, so the caller may send the request again.
    """
    if forwarded_by_a_worker(store, request):
        return None
    app = store.app
    try:
        owner = app.router.key_store(store.table.name, conversation_id)
    except KeyError:
        raise ApiError(
            503,
            f"partitions are not assigned yet: retry in {FORWARD_RETRY_AFTER} s",
            headers={"Retry-After": str(FORWARD_RETRY_AFTER)},
            retry=True,
        ) from None
    url = url_at(store, request, owner)
    if url is None:
        return None
    headers = forwarded_headers(store, request, url)
    try:
        return await _forwarded(store, request, url, body, headers)
    except aiohttp.ClientConnectorError as err:
        log.warning(
            "%s for %r: the worker that owns it at %s:%s cannot be reached (%s)",
            request.method,
            conversation_id,
            url.host,
            url.port,
            err.os_error.strerror or type(err.os_error).__name__,
        )
        raise ApiError(
            503,
            f"the worker that owns conversation {conversation_id!r} cannot be reached; "
            f"its partitions move to another worker shortly: retry in {FORWARD_RETRY_AFTER} s",
            headers={"Retry-After": str(FORWARD_RETRY_AFTER)},
            retry=True,
        ) from None
    except aiohttp.ClientError as err:  # it went away while answering: the request may be in
        raise ApiError(
            502,
            f"the worker that owns conversation {conversation_id!r} stopped answering "
            f"({type(err).__name__}); the request may have been taken: ask again with the "
            "same request_id to get its answer",
        ) from None


async def _forwarded(
    store: StoreApp, request: web.Request, url: yarl.URL, body: bytes, headers: dict[str, str]
) -> web.Response:
    """``request`` sent on to ``url``, and its answer passed back as it comes."""
    app = store.app
    async with app.http_client.request(request.method, url, data=body, headers=headers) as answer:
        if answer.content_type == EVENT_STREAM:  # passed on as it comes
            passed = {
                name: answer.headers[name] for name in STREAM_HEADERS if name in answer.headers
            }
            streamed = aioweb.StreamResponse(status=answer.status, headers=passed)
            await streamed.prepare(cast(aioweb.Request, request))
            # The caller left (the turn goes on), or the owner did (the stream ends early).
            with contextlib.suppress(ConnectionError, aiohttp.ClientError):
                async for data in answer.content.iter_any():
                    await streamed.write(data)
                await streamed.write_eof()
            return cast(web.Response, streamed)
        response = aioweb.Response(
            body=await answer.read(), status=answer.status, content_type=answer.content_type
        )
    return cast(web.Response, response)


def event_body(body: dict[str, Any]) -> EventBody:
    """The event a POST /events body describes."""
    kind = body.get("type", "game")
    text = bodies.text(body, "text")
    if kind == "user":
        if "kind" in body or "attributes" in body:
            raise ApiError(400, "kind and attributes belong to game events, not user messages")
        return UserMessage(text=text)
    if kind == "game":
        return GameEvent(
            kind=bodies.optional_text(body, "kind") or "game",
            text=text,
            attributes=bodies.attributes(body, "attributes"),
        )
    raise ApiError(400, f"type must be 'game' or 'user', not {kind!r}", field="type")
