"""The scripted Responses API server (``POST /v1/responses``), driven by the real SDK.

Over HTTP, on both of the SDK's transports (httpx and aiohttp): a scripted response
comes back whole from ``responses.create``, and as a stream whose events validate as
the SDK's types and accumulate back to exactly the whole response.
"""

from __future__ import annotations

import http.client
import json
import typing
from typing import Any

import openai
import pydantic
import pytest
from openai.types.responses import Response, ResponseStreamEvent

from goaicore.testing import (
    ResponsesServer,
    ScriptedResponse,
    responses_context_length_error,
    responses_echo,
    responses_error,
    responses_reply,
    responses_stream_tokens,
)
from goaicore.testing.streams import responses_stream, split_slices, split_tokens, token_text
from tests.core.test_streaming_servers import raw_reads

USER: Any = [{"role": "user", "content": "hi"}]

# Every output item type the encoder streams, and one it sends whole.
ITEMS: list[dict[str, Any]] = [
    {
        "type": "reasoning",
        "id": "rs_1",
        "summary": [
            {"type": "summary_text", "text": "The user wants the score."},
            {"type": "summary_text", "text": "Looking it up."},
        ],
        "content": [{"type": "reasoning_text", "text": "Score of Leeds, so call get_score."}],
        "encrypted_content": "gAAAAB-opaque-state",
    },
    {
        "type": "message",
        "id": "msg_1",
        "status": "completed",
        "role": "assistant",
        "content": [
            {
                "type": "output_text",
                "text": "Leeds lead 2-1, per the league site.",
                "annotations": [
                    {
                        "type": "url_citation",
                        "start_index": 0,
                        "end_index": 5,
                        "title": "League",
                        "url": "https://example.com/league",
                    }
                ],
                "logprobs": [],
            },
            {"type": "refusal", "refusal": "I cannot share the odds."},
        ],
    },
    {
        "type": "function_call",
        "id": "fc_1",
        "call_id": "call_1",
        "name": "get_score",
        "arguments": json.dumps({"team": "Leeds", "season": [2023, 2024]}),
        "status": "completed",
    },
    {
        "type": "custom_tool_call",
        "id": "ctc_1",
        "call_id": "call_2",
        "name": "run_sql",
        "input": "SELECT score FROM matches WHERE team = 'Leeds'",
    },
    {
        "type": "web_search_call",
        "id": "ws_1",
        "status": "completed",
        "action": {"type": "search", "query": "Leeds score"},
    },
]

EVENT_TYPES: dict[str, type[pydantic.BaseModel]] = {
    typing.get_args(model.model_fields["type"].annotation)[0]: model
    for model in typing.get_args(typing.get_args(ResponseStreamEvent)[0])
}


@pytest.fixture(params=["httpx", "aiohttp"])
def transport(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def client_for(server: ResponsesServer, transport: str = "httpx") -> openai.AsyncOpenAI:
    http = openai.DefaultAioHttpClient() if transport == "aiohttp" else None
    return openai.AsyncOpenAI(
        base_url=server.base_url, api_key="test", max_retries=0, timeout=10, http_client=http
    )


def post_raw(
    server: ResponsesServer, body: Any, path: str = "/v1/responses"
) -> tuple[http.client.HTTPResponse, bytes]:
    """The response (status, headers) and its de-chunked body, through the stdlib client."""
    host, port = server.url.removeprefix("http://").split(":")
    connection = http.client.HTTPConnection(host, int(port), timeout=10)
    try:
        connection.request("POST", path, json.dumps(body), {"Content-Type": "application/json"})
        response = connection.getresponse()
        return response, response.read()
    finally:
        connection.close()


def sse_events(raw: bytes) -> list[tuple[str | None, dict[str, Any]]]:
    """``(event, data)`` per Server-Sent Event."""
    events = []
    for block in raw.decode().split("\n\n"):
        if block:
            fields = dict(line.split(": ", 1) for line in block.split("\n"))
            events.append((fields.get("event"), json.loads(fields["data"])))
    return events


def encoded(response: dict[str, Any]) -> list[dict[str, Any]]:
    return [data for _, data in sse_events(b"".join(responses_stream(response)))]


def extras(model: Any, where: str = "") -> list[str]:
    """The fields, anywhere in ``model``, that its SDK type does not declare."""
    if isinstance(model, list):
        return [f for n, item in enumerate(model) for f in extras(item, f"{where}[{n}]")]
    if not isinstance(model, pydantic.BaseModel):
        return []
    found = [f"{where}.{key}" for key in model.model_extra or {}]
    for name in type(model).model_fields:
        found += extras(getattr(model, name), f"{where}.{name}")
    return found


def unparsed(value: Any) -> Any:
    """An SDK dump without the fields the SDK's stream helper adds (``parsed``...)."""
    if isinstance(value, list):
        return [unparsed(item) for item in value]
    if isinstance(value, dict):
        return {
            key: unparsed(item)
            for key, item in value.items()
            if key not in ("parsed", "parsed_arguments")
        }
    return value


# ---- the response object ----------------------------------------------------------


def test_the_reply_is_a_response_with_reasoning_text_and_function_calls() -> None:
    scripted = responses_reply(
        "Checking.",
        tool_calls=[("get_score", {"team": "Leeds"}), ("call_x", "get_time", "{}")],
        reasoning=("The user wants the score.", "gAAAAB-opaque"),
        usage=(12, 7),
    )
    body = scripted.body
    response = Response.model_validate(body)
    assert extras(response) == []
    assert body["id"].startswith("resp_")
    assert body["object"] == "response"
    assert body["status"] == "completed"
    assert body["error"] is None
    assert body["incomplete_details"] is None
    reasoning, message, score, clock = body["output"]
    assert reasoning == {
        "type": "reasoning",
        "id": reasoning["id"],
        "summary": [{"type": "summary_text", "text": "The user wants the score."}],
        "encrypted_content": "gAAAAB-opaque",
    }
    assert message == {
        "type": "message",
        "id": message["id"],
        "status": "completed",
        "role": "assistant",
        "content": [
            {"type": "output_text", "text": "Checking.", "annotations": [], "logprobs": []}
        ],
    }
    assert score == {
        "type": "function_call",
        "id": score["id"],
        "call_id": score["call_id"],
        "name": "get_score",
        "arguments": '{"team": "Leeds"}',
        "status": "completed",
    }
    assert (clock["call_id"], clock["arguments"]) == ("call_x", "{}")
    assert [reasoning["id"][:3], message["id"][:4], score["id"][:3], score["call_id"][:5]] == [
        "rs_",
        "msg_",
        "fc_",
        "call_",
    ]
    assert body["usage"] == {
        "input_tokens": 12,
        "input_tokens_details": {"cached_tokens": 0, "cache_write_tokens": 0},
        "output_tokens": 7,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": 19,
    }
    assert response.output_text == "Checking."


def test_reply_variants_validate() -> None:
    incomplete = responses_reply("Leeds lead", status="incomplete").body
    assert incomplete["incomplete_details"] == {"reason": "max_output_tokens"}
    assert incomplete["output"][0]["status"] == "incomplete"
    assert incomplete["completed_at"] is None
    filtered = responses_reply(status="incomplete", incomplete_reason="content_filter").body
    assert filtered["incomplete_details"] == {"reason": "content_filter"}
    assert filtered["output"] == []
    assert responses_reply(reasoning="").body["output"][0]["summary"] == []
    assert "encrypted_content" not in responses_reply(reasoning="Hm.").body["output"][0]
    verbatim = responses_reply("ignored", items=ITEMS, extra={"instructions": "Be brief."}).body
    assert verbatim["output"] == ITEMS
    assert verbatim["instructions"] == "Be brief."
    for body in (incomplete, filtered, verbatim, responses_reply().body):
        assert extras(Response.model_validate(body)) == []


# ---- the event stream -------------------------------------------------------------


def test_every_event_validates_as_its_sdk_type() -> None:
    body = responses_reply(items=ITEMS, usage=(30, 17)).body
    events = encoded(body)
    assert [event["sequence_number"] for event in events] == list(range(len(events)))
    adapter: pydantic.TypeAdapter[Any] = pydantic.TypeAdapter(ResponseStreamEvent)
    for event in events:
        model = EVENT_TYPES[event["type"]].model_validate(event)
        assert extras(model) == [], event
        assert type(adapter.validate_python(event)) is type(model)
    kinds = [event["type"] for event in events]
    assert kinds[:2] == ["response.created", "response.in_progress"]
    assert kinds[-1] == "response.completed"
    assert kinds.count("response.output_item.added") == len(ITEMS)
    assert kinds.count("response.output_item.done") == len(ITEMS)


def test_the_stream_wire_shape() -> None:
    scripted = responses_reply(items=ITEMS, usage=(30, 17))
    body = scripted.body
    with ResponsesServer([scripted]) as server:
        answer, raw = post_raw(server, {"model": "gpt-test", "input": "hi", "stream": True})
    assert answer.headers["Content-Type"] == "text/event-stream"
    assert answer.headers["Transfer-Encoding"] == "chunked"
    events = sse_events(raw)
    assert all(name == data["type"] for name, data in events)
    data = [event for _, event in events]
    start = {
        **body,
        "status": "in_progress",
        "completed_at": None,
        "output": [],
        "usage": None,
    }
    assert data[0] == {"type": "response.created", "sequence_number": 0, "response": start}
    assert data[1] == {"type": "response.in_progress", "sequence_number": 1, "response": start}
    assert data[-1] == {
        "type": "response.completed",
        "sequence_number": len(data) - 1,
        "response": body,
    }
    added = [e["item"] for e in data if e["type"] == "response.output_item.added"]
    assert added == [
        {**ITEMS[0], "summary": [], "content": [], "encrypted_content": None},
        {**ITEMS[1], "status": "in_progress", "content": []},
        {**ITEMS[2], "status": "in_progress", "arguments": ""},
        {**ITEMS[3], "input": ""},
        {**ITEMS[4], "status": "in_progress"},
    ]
    done = [e["item"] for e in data if e["type"] == "response.output_item.done"]
    assert done == ITEMS

    def of(index: int) -> list[dict[str, Any]]:
        """The events of output item ``index``, without their sequence numbers."""
        return [
            {k: v for k, v in e.items() if k not in ("sequence_number", "output_index")}
            for e in data
            if e.get("output_index") == index and not e["type"].startswith("response.output_item")
        ]

    reasoning = of(0)
    at: dict[str, Any] = {"item_id": "rs_1"}
    thought = ITEMS[0]["content"][0]["text"]
    first, second = (part["text"] for part in ITEMS[0]["summary"])
    assert reasoning == [
        {
            "type": "response.content_part.added",
            **at,
            "content_index": 0,
            "part": {"type": "reasoning_text", "text": ""},
        },
        *[
            {"type": "response.reasoning_text.delta", **at, "content_index": 0, "delta": piece}
            for piece in split_tokens(thought)
        ],
        {"type": "response.reasoning_text.done", **at, "content_index": 0, "text": thought},
        {
            "type": "response.content_part.done",
            **at,
            "content_index": 0,
            "part": ITEMS[0]["content"][0],
        },
        *[
            event
            for index, text in enumerate((first, second))
            for event in (
                {
                    "type": "response.reasoning_summary_part.added",
                    **at,
                    "summary_index": index,
                    "part": {"type": "summary_text", "text": ""},
                },
                *[
                    {
                        "type": "response.reasoning_summary_text.delta",
                        **at,
                        "summary_index": index,
                        "delta": piece,
                    }
                    for piece in split_tokens(text)
                ],
                {
                    "type": "response.reasoning_summary_text.done",
                    **at,
                    "summary_index": index,
                    "text": text,
                },
                {
                    "type": "response.reasoning_summary_part.done",
                    **at,
                    "summary_index": index,
                    "part": {"type": "summary_text", "text": text},
                },
            )
        ],
    ]
    text_part, refusal_part = ITEMS[1]["content"]
    text_at = {"item_id": "msg_1", "content_index": 0}
    refusal_at = {"item_id": "msg_1", "content_index": 1}
    assert of(1) == [
        {
            "type": "response.content_part.added",
            **text_at,
            "part": {**text_part, "text": "", "annotations": []},
        },
        *[
            {"type": "response.output_text.delta", **text_at, "delta": piece, "logprobs": []}
            for piece in split_tokens(text_part["text"])
        ],
        {
            "type": "response.output_text.annotation.added",
            **text_at,
            "annotation_index": 0,
            "annotation": text_part["annotations"][0],
        },
        {
            "type": "response.output_text.done",
            **text_at,
            "text": text_part["text"],
            "logprobs": [],
        },
        {"type": "response.content_part.done", **text_at, "part": text_part},
        {
            "type": "response.content_part.added",
            **refusal_at,
            "part": {"type": "refusal", "refusal": ""},
        },
        *[
            {"type": "response.refusal.delta", **refusal_at, "delta": piece}
            for piece in split_tokens(refusal_part["refusal"])
        ],
        {"type": "response.refusal.done", **refusal_at, "refusal": refusal_part["refusal"]},
        {"type": "response.content_part.done", **refusal_at, "part": refusal_part},
    ]
    arguments = ITEMS[2]["arguments"]
    assert of(2) == [
        *[
            {"type": "response.function_call_arguments.delta", "item_id": "fc_1", "delta": piece}
            for piece in split_slices(arguments)
        ],
        {
            "type": "response.function_call_arguments.done",
            "item_id": "fc_1",
            "arguments": arguments,
        },
    ]
    assert len(split_slices(arguments)) >= 2
    sql = ITEMS[3]["input"]
    assert of(3) == [
        *[
            {"type": "response.custom_tool_call_input.delta", "item_id": "ctc_1", "delta": piece}
            for piece in split_slices(sql)
        ],
        {"type": "response.custom_tool_call_input.done", "item_id": "ctc_1", "input": sql},
    ]
    assert of(4) == []


@pytest.mark.parametrize(
    ("status", "final"),
    [("incomplete", "response.incomplete"), ("failed", "response.failed")],
)
def test_an_unfinished_response_ends_with_its_status_event(status: str, final: str) -> None:
    body = responses_reply("Leeds lead", status=status).body
    events = encoded(body)
    assert events[-1] == {"type": final, "sequence_number": len(events) - 1, "response": body}
    assert events[0]["response"]["incomplete_details"] is None
    for event in events:
        assert extras(EVENT_TYPES[event["type"]].model_validate(event)) == []


# ---- through the SDK --------------------------------------------------------------


async def test_create_returns_the_scripted_response(transport: str) -> None:
    scripted = responses_reply(
        "Let me check.",
        tool_calls=[("call_a", "get_score", {"team": "Leeds"})],
        reasoning=("The user wants the score.", "gAAAAB-opaque"),
    )
    with ResponsesServer([scripted]) as server:
        async with client_for(server, transport) as client:
            response = await client.responses.create(
                model="gpt-test",
                input=USER,
                store=False,
                include=["reasoning.encrypted_content"],
                tools=[
                    {
                        "type": "function",
                        "name": "get_score",
                        "parameters": {"type": "object", "properties": {}},
                        "strict": False,
                    }
                ],
            )
        sent = server.requests[0]
    assert response.to_dict() == scripted.body
    assert response.output_text == "Let me check."
    reasoning, _, call = response.output
    assert reasoning.type == "reasoning"
    assert reasoning.encrypted_content == "gAAAAB-opaque"
    assert call.type == "function_call"
    assert (call.call_id, call.name, call.arguments) == ("call_a", "get_score", '{"team": "Leeds"}')
    assert sent.method == "POST"
    assert sent.path == "/v1/responses"
    assert sent.headers["authorization"] == "Bearer test"
    assert sent.body["store"] is False
    assert sent.body["include"] == ["reasoning.encrypted_content"]
    assert sent.body["input"] == USER
    assert sent.body["tools"][0]["name"] == "get_score"
    assert "stream" not in sent.body


async def test_a_second_turn_sends_the_output_items_back_as_input(transport: str) -> None:
    first = responses_reply(
        tool_calls=[("call_a", "get_score", {"team": "Leeds"})],
        reasoning=("Needs the score.", "gAAAAB-opaque"),
    )
    with ResponsesServer([first, responses_reply("Leeds lead 2-1.")]) as server:
        async with client_for(server, transport) as client:
            response = await client.responses.create(model="gpt-test", input=USER, store=False)
            replay: list[Any] = [item.to_dict() for item in response.output]
            result: Any = {"type": "function_call_output", "call_id": "call_a", "output": "2-1"}
            answer = await client.responses.create(
                model="gpt-test", input=[*USER, *replay, result], store=False
            )
        sent = server.bodies[1]
    assert answer.output_text == "Leeds lead 2-1."
    assert sent["input"] == [*USER, *first.body["output"], result]
    assert sent["input"][1]["encrypted_content"] == "gAAAAB-opaque"


async def test_the_generic_post_gets_the_response(transport: str) -> None:
    scripted = responses_reply("Hello.")
    with ResponsesServer([scripted]) as server:
        async with client_for(server, transport) as client:
            body = {"model": "gpt-test", "input": "hi", "store": False}
            response = await client.post("/responses", body=body, cast_to=Response)
        assert server.bodies == [body]
    assert response.to_dict() == scripted.body


async def test_a_stream_yields_typed_events_completing_with_the_whole_response(
    transport: str,
) -> None:
    scripted = responses_reply(items=ITEMS, usage=(30, 17))
    with ResponsesServer([scripted]) as server:
        async with client_for(server, transport) as client:
            stream = await client.responses.create(
                model="gpt-test", input=USER, store=False, stream=True
            )
            events = [event async for event in stream]
        sent = server.bodies[0]
    assert sent["stream"] is True
    assert sent["store"] is False
    assert [event.sequence_number for event in events] == list(range(len(events)))
    assert all(type(event) is EVENT_TYPES[event.type] for event in events)
    assert events[0].type == "response.created"
    assert events[-1].type == "response.completed"
    assert events[-1].response.to_dict() == scripted.body
    texts = [event.delta for event in events if event.type == "response.output_text.delta"]
    assert len(texts) > 3
    assert "".join(texts) == ITEMS[1]["content"][0]["text"]
    arguments = [
        event.delta for event in events if event.type == "response.function_call_arguments.delta"
    ]
    assert "".join(arguments) == ITEMS[2]["arguments"]
    summaries = [
        event.delta for event in events if event.type == "response.reasoning_summary_text.delta"
    ]
    assert "".join(summaries) == "".join(part["text"] for part in ITEMS[0]["summary"])
    done = [event.item for event in events if event.type == "response.output_item.done"]
    assert [item.to_dict() for item in done] == ITEMS


async def test_the_stream_helper_gets_the_whole_response_back(transport: str) -> None:
    scripted = responses_reply(
        "Sure, checking.",
        tool_calls=[("call_1", "lookup", {"name": "Ada", "deep": True})],
        reasoning=("Look Ada up.", "gAAAAB-opaque"),
    )
    with ResponsesServer([scripted]) as server:
        async with (
            client_for(server, transport) as client,
            client.responses.stream(model="gpt-test", input=USER, store=False) as stream,
        ):
            kinds = [event.type async for event in stream]
            response = await stream.get_final_response()
    assert kinds.count("response.output_text.delta") == 2
    assert kinds[-1] == "response.completed"
    assert unparsed(response.to_dict()) == scripted.body
    assert response.output_text == "Sure, checking."


async def test_a_request_that_does_not_stream_gets_json(transport: str) -> None:
    with ResponsesServer([responses_reply("whole", chunk_delay=5)]) as server:
        async with client_for(server, transport) as client:
            response = await client.responses.create(model="gpt-test", input=USER)
        server.add(responses_reply("raw"))
        answer, raw = post_raw(server, {"model": "gpt-test", "input": "hi"})
    assert response.output_text == "whole"
    assert answer.headers["Content-Type"] == "application/json"
    assert json.loads(raw)["output"][0]["content"][0]["text"] == "raw"


@pytest.mark.parametrize(
    ("scripted", "error"),
    [
        (responses_error(400, "bad model"), openai.BadRequestError),
        (responses_error(401, "bad key", type="authentication_error"), openai.AuthenticationError),
        (responses_error(429, "slow down", code="rate_limit_exceeded"), openai.RateLimitError),
        (responses_error(500, "server trouble", type="server_error"), openai.InternalServerError),
        (responses_context_length_error(), openai.BadRequestError),
    ],
)
async def test_error_statuses_raise_the_sdks_status_errors(
    transport: str, scripted: ScriptedResponse, error: type[openai.APIStatusError]
) -> None:
    with ResponsesServer([scripted, scripted]) as server:
        async with client_for(server, transport) as client:
            with pytest.raises(error) as whole:
                await client.responses.create(model="gpt-test", input=USER)
            with pytest.raises(error) as streamed:
                await client.responses.create(model="gpt-test", input=USER, stream=True)
    for raised in (whole.value, streamed.value):
        assert raised.status_code == scripted.status
        assert raised.body == scripted.body["error"]
        assert raised.message.endswith(scripted.body["error"]["message"])
    if scripted.status in (429, 500):
        assert scripted.headers == {"retry-after-ms": "5"}


def test_the_context_length_error_names_the_input() -> None:
    assert responses_context_length_error().body["error"] == {
        "message": "Your input exceeds the context window of this model. "
        "Please adjust your input and try again.",
        "type": "invalid_request_error",
        "param": "input",
        "code": "context_length_exceeded",
    }


async def test_the_echo_answers_the_last_user_input(transport: str) -> None:
    inputs: list[Any] = [
        "plain",
        [{"role": "user", "content": "first"}, {"role": "user", "content": "second"}],
        [
            {"role": "developer", "content": "Be brief."},
            {
                "type": "message",
                "role": "user",
                "content": [
                    {"type": "input_text", "text": "part one"},
                    {"type": "input_text", "text": "part two"},
                ],
            },
            {"type": "function_call_output", "call_id": "call_1", "output": "2-1"},
        ],
    ]
    with ResponsesServer(responder=responses_echo) as server:
        async with client_for(server, transport) as client:
            texts = [
                (await client.responses.create(model="gpt-test", input=given)).output_text
                for given in inputs
            ]
    assert texts == ["echo: plain", "echo: second", "echo: part one part two"]


async def test_the_token_responder_streams_exactly_n_tokens(transport: str) -> None:
    with ResponsesServer(responder=responses_stream_tokens(25, rate_per_s=2000)) as server:
        async with client_for(server, transport) as client:
            stream = await client.responses.create(model="gpt-test", input=USER, stream=True)
            events = [event async for event in stream]
            whole = await client.responses.create(model="gpt-test", input=USER)
    tokens = [event.delta for event in events if event.type == "response.output_text.delta"]
    assert len(tokens) == 25
    assert "".join(tokens) == token_text(25) == whole.output_text
    assert events[-1].type == "response.completed"
    assert events[-1].response.usage is not None
    assert events[-1].response.usage.output_tokens == 25
    with pytest.raises(ValueError, match="rate_per_s"):
        responses_stream_tokens(5, rate_per_s=0)


def test_chunk_delay_paces_the_pieces() -> None:
    with ResponsesServer([responses_reply("one two three four five", chunk_delay=0.05)]) as server:
        reads = raw_reads(server, "/v1/responses", {"stream": True})
    # headers, then each of the five words in a write of its own
    assert len(reads) >= 4
    text = b"".join(reads)
    positions = [text.index(b'"delta":"%s' % word) for word in (b"one", b"two", b"three")]
    assert positions == sorted(positions)


def test_other_paths_are_404_and_a_body_in_another_shape_goes_whole() -> None:
    odd = ScriptedResponse(200, {"note": "not a response"})
    with ResponsesServer([odd]) as server:
        missing, _ = post_raw(server, {}, "/v1/chat/completions")
        assert missing.status == 404
        answer, raw = post_raw(server, {"stream": True})
        assert server.requests[0].path == "/v1/responses"
    assert answer.headers["Content-Type"] == "application/json"
    assert json.loads(raw) == odd.body
