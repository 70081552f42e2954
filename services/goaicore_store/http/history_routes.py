"""History operations over HTTP (``goaicore.store.history``), each an event in the log:

- ``POST /v1/conversations/{id}/undo``: rewind to just before the last user message;
- ``POST /v1/conversations/{id}/regenerate`` ``{"timeout"?}``: ask the last user
  message again in one request that carries its undo (answered like ``/messages``, by
  the worker that owns the conversation, which appends the rewind with the new turn);
- ``POST /v1/conversations/{id}/rewind`` ``{"until_offset"}``: the history as it was
  after that offset of the conversation's partition (-1: empty);
- ``POST /v1/conversations/{id}/fork`` ``{"to", "before_offset"? | "as_of"?}``: start
  ``to`` with this conversation's history;
- ``PATCH /v1/conversations/{id}/metadata`` ``{"title"?, "owner"?, "tags"?,
  "attributes"?}``: change the metadata (an attribute set to null is removed);
- ``POST /v1/conversations/{id}/erase`` ``{"reason"?}``: erase the conversation's
  content (its data key is destroyed; the audit skeleton stays);
- and, beside the snapshot's ``GET`` (``routes``), ``DELETE /v1/conversations/{id}``
  ``{"reason"?}``: delete the conversation (its history and metadata leave the
  snapshot; the log keeps its events).

They run on the worker's store (``goaicore_store.port``); its refusals are the API's
errors (``operations``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from faust import web

from goaicore.records.jsonable import jsonable
from goaicore_store.http import bodies
from goaicore_store.http.operations import store_errors
from goaicore_store.http.routes import (
    CONVERSATION_PATH,
    ask_timeout,
    forward_to_owner,
    json_answer,
    position_answer,
    read_body,
    regenerate,
    valid_conversation,
)

if TYPE_CHECKING:
    from goaicore.store.port import ConversationStore
    from goaicore_store.topology import StoreApp

REWIND_FIELDS = ("until_offset",)
FORK_FIELDS = ("to", "before_offset", "as_of")
METADATA_FIELDS = ("title", "owner", "tags", "attributes")
REGENERATE_FIELDS = ("timeout",)
ERASE_FIELDS = ("reason",)


def register_history_views(store: StoreApp, port: ConversationStore) -> None:
    """Add the history operations' views to the store app's web server."""
    app = store.app
    limit = store.settings.max_record_bytes

    @app.page(f"{CONVERSATION_PATH}/undo")
    class Undo(web.View):
        """Rewind to just before the last user message."""

        async def post(self, request: web.Request, conversation_id: str) -> web.Response:
            conversation_id = valid_conversation(conversation_id)
            bodies.json_object(await read_body(request, limit) or b"{}", ())
            with store_errors():
                undone = await port.undo(conversation_id)
            return json_answer(jsonable(undone))

    @app.page(f"{CONVERSATION_PATH}/regenerate")
    class Regenerate(web.View):
        """Ask the last exchange's user message again, its undo appended with the turn."""

        async def post(self, request: web.Request, conversation_id: str) -> web.Response:
            conversation_id = valid_conversation(conversation_id)
            raw = await read_body(request, limit) or b"{}"
            body = bodies.json_object(raw, REGENERATE_FIELDS)
            ask_timeout(body)  # checked before anything is undone
            forwarded = await forward_to_owner(store, request, conversation_id, raw)
            if forwarded is not None:
                return forwarded
            return await regenerate(port, conversation_id, body)

    @app.page(f"{CONVERSATION_PATH}/rewind")
    class Rewind(web.View):
        """The history as it was after an offset of the conversation's partition."""

        async def post(self, request: web.Request, conversation_id: str) -> web.Response:
            conversation_id = valid_conversation(conversation_id)
            body = bodies.json_object(await read_body(request, limit), REWIND_FIELDS)
            until = bodies.whole(body, "until_offset", required=True)
            assert until is not None
            with store_errors():
                rewound = await port.rewind(conversation_id, until)
            return json_answer(jsonable(rewound))

    @app.page(f"{CONVERSATION_PATH}/fork")
    class Fork(web.View):
        """Start a new conversation from this one's history."""

        async def post(self, request: web.Request, conversation_id: str) -> web.Response:
            conversation_id = valid_conversation(conversation_id)
            body = bodies.json_object(await read_body(request, limit), FORK_FIELDS)
            new_id = valid_conversation(bodies.text(body, "to"), field="to")
            before = bodies.whole(body, "before_offset")
            as_of = bodies.moment(body, "as_of")
            with store_errors():
                forked = await port.fork(conversation_id, new_id, before_offset=before, as_of=as_of)
            return json_answer({"conversation_id": new_id, **jsonable(forked)}, status=201)

    @app.page(f"{CONVERSATION_PATH}/metadata")
    class Metadata(web.View):
        """Change the conversation's title, owner, tags or attributes."""

        async def patch(self, request: web.Request, conversation_id: str) -> web.Response:
            conversation_id = valid_conversation(conversation_id)
            body = bodies.json_object(await read_body(request, limit), METADATA_FIELDS)
            title = bodies.optional_text(body, "title")
            owner = bodies.optional_text(body, "owner")
            tags = bodies.optional_strings(body, "tags")
            attributes = bodies.nullable_attributes(body, "attributes")
            with store_errors():
                position = await port.set_metadata(
                    conversation_id, title=title, owner=owner, tags=tags, attributes=attributes
                )
            return position_answer(position)

    @app.page(f"{CONVERSATION_PATH}/erase")
    class Erase(web.View):
        """Erase the conversation's content; answered once its data key is destroyed."""

        async def post(self, request: web.Request, conversation_id: str) -> web.Response:
            conversation_id = valid_conversation(conversation_id)
            body = bodies.json_object(await read_body(request, limit) or b"{}", ERASE_FIELDS)
            reason = bodies.optional_text(body, "reason") or ""
            with store_errors():
                erased = await port.erase(conversation_id, reason)
            position = erased.position
            return json_answer(
                {
                    "partition": position.partition,
                    "offset": position.offset,
                    "key_destroyed": erased.key_destroyed,
                    "already_erased": erased.already_erased,
                    "forks": list(erased.forks),
                }
            )
