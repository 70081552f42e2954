"""The scripted servers stream a scripted response when the request asks for a stream.

Driven by the real SDKs over HTTP, on both of their transports (httpx and aiohttp): what
the SDK accumulates from the stream must be exactly the whole scripted response.
"""

from __future__ import annotations

import asyncio
import http.client
import json
import socket
import threading
import time
from typing import Any

import anthropic
import openai
import pytest

from goaicore.testing import (
    AnthropicServer,
    OpenAIServer,
    RecordedRequest,
    ScriptedResponse,
    ScriptedServer,
    anthropic_reply,
    anthropic_stream_tokens,
    openai_reply,
    openai_stream_tokens,
)
from goaicore.testing.streams import split_slices, split_tokens, token_text

USER: Any = [{"role": "user", "content": "hi"}]


@pytest.fixture(params=["httpx", "aiohttp"])
def transport(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def openai_client(server: OpenAIServer, transport: str = "httpx") -> openai.AsyncOpenAI:
    http = openai.DefaultAioHttpClient() if transport == "aiohttp" else None
    return openai.AsyncOpenAI(
        base_url=server.base_url, api_key="test", max_retries=0, timeout=10, http_client=http
    )


def anthropic_client(server: AnthropicServer, transport: str = "httpx") -> anthropic.AsyncAnthropic:
    http = anthropic.DefaultAioHttpClient() if transport == "aiohttp" else None
    return anthropic.AsyncAnthropic(
        base_url=server.base_url, api_key="test", max_retries=0, timeout=10, http_client=http
    )


async def openai_chunks(client: openai.AsyncOpenAI, **kwargs: Any) -> list[Any]:
    stream = await client.chat.completions.create(
        model="gpt-test", messages=USER, stream=True, **kwargs
    )
    return [chunk async for chunk in stream]


def post_raw(server: OpenAIServer | AnthropicServer, path: str, body: Any) -> tuple[Any, bytes]:
    """The response headers and the de-chunked body, through the stdlib client."""
    host, port = server.url.removeprefix("http://").split(":")
    connection = http.client.HTTPConnection(host, int(port), timeout=10)
    try:
        connection.request("POST", path, json.dumps(body), {"Content-Type": "application/json"})
        response = connection.getresponse()
        return response.headers, response.read()
    finally:
        connection.close()


def sse_events(raw: bytes) -> list[tuple[str | None, str]]:
    """``(event, data)`` per Server-Sent Event."""
    events = []
    for block in raw.decode().split("\n\n"):
        if not block:
            continue
        fields = dict(line.split(": ", 1) for line in block.split("\n"))
        events.append((fields.get("event"), fields["data"]))
    return events


# ---- splitting -------------------------------------------------------------------


def test_text_splits_into_words_and_arguments_into_slices() -> None:
    assert split_tokens("  Hello there,  world!\n") == ["  ", "Hello ", "there,  ", "world!\n"]
    assert split_tokens("") == []
    assert split_tokens("x" * 40) == ["x" * 16, "x" * 16, "x" * 8]
    assert len(split_tokens(token_text(37))) == 37
    assert split_slices("{}") == ["{", "}"]
    assert split_slices("") == []
    arguments = json.dumps({"team": "Leeds", "season": [2023, 2024]})
    assert len(split_slices(arguments)) >= 2
    assert "".join(split_slices(arguments)) == arguments


# ---- OpenAI ----------------------------------------------------------------------


async def test_openai_chunks_reassemble_the_scripted_completion(transport: str) -> None:
    scripted = openai_reply(
        "Leeds lead 2-1, with  ten minutes left.",
        tool_calls=[("call_a", "get_score", {"team": "Leeds"}), ("call_b", "get_time", "{}")],
        usage=(12, 7),
        extra={"reasoning_content": "The user wants the score."},
    )
    message = scripted.body["choices"][0]["message"]
    with OpenAIServer([scripted]) as server:
        async with openai_client(server, transport) as client:
            chunks = await openai_chunks(client, stream_options={"include_usage": True})
        sent = server.bodies[0]
    assert sent["stream"] is True
    assert sent["stream_options"] == {"include_usage": True}
    assert {chunk.id for chunk in chunks} == {scripted.body["id"]}
    assert {chunk.object for chunk in chunks} == {"chat.completion.chunk"}
    deltas = [chunk.choices[0].delta for chunk in chunks if chunk.choices]
    assert deltas[0].role == "assistant"
    texts = [delta.content for delta in deltas if delta.content]
    assert len(texts) > 3
    assert "".join(texts) == message["content"]
    reasoning = [getattr(delta, "reasoning_content", None) or "" for delta in deltas]
    assert "".join(reasoning) == message["reasoning_content"]
    calls: dict[int, dict[str, str]] = {}
    for delta in deltas:
        for call in delta.tool_calls or []:
            entry = calls.setdefault(call.index, {"id": "", "name": "", "arguments": ""})
            entry["id"] += call.id or ""
            assert call.function is not None
            entry["name"] += call.function.name or ""
            entry["arguments"] += call.function.arguments or ""
    assert [calls[index] for index in sorted(calls)] == [
        {"id": call["id"], **call["function"]} for call in message["tool_calls"]
    ]
    finishes = [chunk.choices[0].finish_reason for chunk in chunks if chunk.choices]
    assert finishes[:-1] == [None] * (len(finishes) - 1)
    assert finishes[-1] == "tool_calls"
    assert chunks[-1].choices == []
    assert chunks[-1].usage is not None
    usage = scripted.body["usage"]
    assert chunks[-1].usage.model_dump(include=set(usage)) == usage


async def test_openai_stream_helper_gets_the_whole_completion_back(transport: str) -> None:
    scripted = openai_reply(
        "Sure, checking.", tool_calls=[("call_1", "lookup", {"name": "Ada", "deep": True})]
    )
    with OpenAIServer([scripted]) as server:
        async with (
            openai_client(server, transport) as client,
            client.chat.completions.stream(
                model="gpt-test", messages=USER, stream_options={"include_usage": True}
            ) as stream,
        ):
            completion = await stream.get_final_completion()
    whole = scripted.body
    assert completion.id == whole["id"]
    assert completion.choices[0].finish_reason == "tool_calls"
    message = completion.choices[0].message
    assert message.content == whole["choices"][0]["message"]["content"]
    assert message.tool_calls is not None
    assert [
        {
            "id": call.id,
            "type": call.type,
            "function": call.function.model_dump(include={"name", "arguments"}),
        }
        for call in message.tool_calls
    ] == whole["choices"][0]["message"]["tool_calls"]
    assert completion.usage is not None
    assert completion.usage.model_dump(include=set(whole["usage"])) == whole["usage"]


def test_openai_wire_shape() -> None:
    scripted = openai_reply(
        "Hi there", extra={"refusal": "", "reasoning_content": "Thinking.", "custom": {"a": 1}}
    )
    with OpenAIServer([scripted]) as server:
        headers, raw = post_raw(server, "/v1/chat/completions", {"stream": True})
    assert headers["Content-Type"] == "text/event-stream"
    assert headers["Transfer-Encoding"] == "chunked"
    assert headers["Content-Length"] is None
    events = sse_events(raw)
    assert {event for event, _ in events} == {None}
    assert events[-1][1] == "[DONE]"
    chunks = [json.loads(data) for _, data in events[:-1]]
    assert list(chunks[0]) == ["id", "object", "created", "model", "choices"]
    first = chunks[0]["choices"][0]
    assert first == {"index": 0, "delta": first["delta"], "finish_reason": None}
    assert list(first["delta"].items()) == [
        ("role", "assistant"),
        ("content", ""),
        ("refusal", ""),
        ("annotations", []),
        ("reasoning_content", ""),
        ("custom", {"a": 1}),
    ]
    deltas = [chunk["choices"][0]["delta"] for chunk in chunks[1:]]
    assert deltas == [
        {"reasoning_content": "Thinking."},
        {"content": "Hi "},
        {"content": "there"},
        {},
    ]
    assert chunks[-1]["choices"][0]["finish_reason"] == "stop"
    assert all("usage" not in chunk for chunk in chunks)


@pytest.mark.parametrize("content", [None, "", [{"type": "text", "text": "a part"}]])
def test_openai_content_that_is_not_text_goes_whole_in_the_first_delta(content: Any) -> None:
    scripted = openai_reply(content=content) if content is not None else openai_reply()
    with OpenAIServer([scripted]) as server:
        body = {"stream": True, "stream_options": {"include_usage": True}}
        _, raw = post_raw(server, "/v1/chat/completions", body)
    chunks = [json.loads(data) for _, data in sse_events(raw)[:-1]]
    assert [chunk["choices"][0]["delta"] for chunk in chunks[:-1]] == [
        {"role": "assistant", "content": content, "refusal": None, "annotations": []},
        {},
    ]
    assert [chunk["usage"] for chunk in chunks] == [None, None, scripted.body["usage"]]


# ---- Anthropic -------------------------------------------------------------------

BLOCKS: list[dict[str, Any]] = [
    {"type": "thinking", "thinking": "The user wants the score of the match.", "signature": "c2ln"},
    {"type": "text", "text": "Let me look that up for you.", "citations": None},
    {"type": "tool_use", "id": "toolu_1", "name": "get_score", "input": {"team": "Leeds"}},
    {"type": "tool_use", "id": "toolu_2", "name": "get_time", "input": {}},
]


async def test_anthropic_stream_gets_the_whole_message_back(transport: str) -> None:
    scripted = anthropic_reply(blocks=BLOCKS, stop_reason="tool_use", usage=(30, 17))
    with AnthropicServer([scripted]) as server:
        async with (
            anthropic_client(server, transport) as client,
            client.messages.stream(model="claude-test", max_tokens=100, messages=USER) as stream,
        ):
            kinds = [event.type async for event in stream]
            message = await stream.get_final_message()
        sent = server.bodies[0]
    assert sent["stream"] is True
    assert kinds.count("text") > 3
    assert kinds.count("thinking") > 3
    assert kinds.count("input_json") >= 3
    assert [
        block.model_dump(include=set(whole))
        for block, whole in zip(message.content, BLOCKS, strict=True)
    ] == BLOCKS
    assert message.id == scripted.body["id"]
    assert message.stop_reason == "tool_use"
    assert message.stop_sequence is None
    assert message.usage.output_tokens == 17
    assert message.usage.input_tokens == 30


def test_anthropic_wire_shape() -> None:
    blocks = [*BLOCKS, {"type": "redacted_thinking", "data": "opaque"}]
    scripted = anthropic_reply(blocks=blocks, stop_reason="tool_use", usage=(30, 17))
    with AnthropicServer([scripted]) as server:
        headers, raw = post_raw(server, "/v1/messages", {"stream": True})
    assert headers["Content-Type"] == "text/event-stream"
    events = [(event, json.loads(data)) for event, data in sse_events(raw)]
    assert all(event == data["type"] for event, data in events)
    start = events[0][1]["message"]
    assert start == {
        **scripted.body,
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": {**scripted.body["usage"], "output_tokens": 1},
    }
    assert events[1][0] == "ping"
    openings = [data["content_block"] for event, data in events if event == "content_block_start"]
    assert openings == [
        {"type": "thinking", "thinking": "", "signature": ""},
        {"type": "text", "text": "", "citations": None},
        {"type": "tool_use", "id": "toolu_1", "name": "get_score", "input": {}},
        {"type": "tool_use", "id": "toolu_2", "name": "get_time", "input": {}},
        {"type": "redacted_thinking", "data": "opaque"},
    ]
    kinds = [event for event, _ in events]
    assert kinds[-2:] == ["message_delta", "message_stop"]
    assert kinds.count("content_block_stop") == len(blocks)
    deltas: dict[int, list[dict[str, Any]]] = {}
    for event, data in events:
        if event == "content_block_delta":
            deltas.setdefault(data["index"], []).append(data["delta"])
    assert {delta["type"] for delta in deltas[0][:-1]} == {"thinking_delta"}
    assert deltas[0][-1] == {"type": "signature_delta", "signature": "c2ln"}
    assert "".join(d["text"] for d in deltas[1]) == BLOCKS[1]["text"]
    assert "".join(d["partial_json"] for d in deltas[2]) == json.dumps(BLOCKS[2]["input"])
    assert 4 not in deltas
    assert events[-2][1] == {
        "type": "message_delta",
        "delta": {"stop_reason": "tool_use", "stop_sequence": None},
        "usage": {"output_tokens": 17},
    }


def test_anthropic_citations_stream_as_deltas() -> None:
    citation = {"type": "char_location", "cited_text": "2-1", "document_index": 0}
    block = {"type": "text", "text": "Leeds lead.", "citations": [citation]}
    with AnthropicServer([anthropic_reply(blocks=[block])]) as server:
        _, raw = post_raw(server, "/v1/messages", {"stream": True})
    events = [json.loads(data) for _, data in sse_events(raw)]
    opening = next(e for e in events if e["type"] == "content_block_start")
    assert opening["content_block"] == {"type": "text", "text": "", "citations": []}
    deltas = [e["delta"] for e in events if e["type"] == "content_block_delta"]
    assert deltas[-1] == {"type": "citations_delta", "citation": citation}


# ---- both ------------------------------------------------------------------------


async def test_a_request_that_does_not_stream_still_gets_json(transport: str) -> None:
    with (
        OpenAIServer([openai_reply("whole", chunk_delay=5)]) as oai,
        AnthropicServer([anthropic_reply("whole", chunk_delay=5)]) as ant,
    ):
        async with openai_client(oai, transport) as client:
            completion = await client.chat.completions.create(model="gpt-test", messages=USER)
        async with anthropic_client(ant, transport) as aclient:
            message = await aclient.messages.create(
                model="claude-test", max_tokens=10, messages=USER
            )
    assert completion.choices[0].message.content == "whole"
    assert message.content[0].type == "text"
    assert message.content[0].text == "whole"


async def test_an_error_status_on_a_stream_request_is_the_sdks_status_error(
    transport: str,
) -> None:
    with OpenAIServer() as oai, AnthropicServer() as ant:
        oai.error(400, "bad model")
        ant.error(400, "bad model")
        async with openai_client(oai, transport) as client:
            with pytest.raises(openai.BadRequestError, match="bad model"):
                await openai_chunks(client)
        async with anthropic_client(ant, transport) as aclient:
            with pytest.raises(anthropic.BadRequestError, match="bad model"):
                async with aclient.messages.stream(
                    model="claude-test", max_tokens=10, messages=USER
                ) as stream:
                    await stream.get_final_message()


def test_a_scripted_body_in_another_shape_goes_whole() -> None:
    odd = ScriptedResponse(200, {"note": "not a completion"})
    with OpenAIServer([odd]) as oai, AnthropicServer([odd]) as ant:
        for server, path in ((oai, "/v1/chat/completions"), (ant, "/v1/messages")):
            headers, raw = post_raw(server, path, {"stream": True})
            assert headers["Content-Type"] == "application/json"
            assert json.loads(raw) == odd.body


def raw_reads(server: ScriptedServer, path: str, body: Any) -> list[bytes]:
    """Each ``recv`` of a streamed response, until the chunked terminator."""
    payload = json.dumps(body).encode()
    host, port = server.url.removeprefix("http://").split(":")
    reads: list[bytes] = []
    with socket.create_connection((host, int(port)), timeout=10) as sock:
        sock.sendall(
            f"POST {path} HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(payload)}\r\n\r\n".encode()
            + payload
        )
        while not b"".join(reads).endswith(b"0\r\n\r\n"):
            data = sock.recv(65536)
            if not data:
                break
            reads.append(data)
    return reads


@pytest.mark.parametrize("server_type", [OpenAIServer, AnthropicServer])
def test_chunk_delay_paces_the_pieces(server_type: type[OpenAIServer | AnthropicServer]) -> None:
    reply = openai_reply if server_type is OpenAIServer else anthropic_reply
    with server_type([reply("one two three four five", chunk_delay=0.05)]) as server:
        reads = raw_reads(server, server.api_path, {"stream": True})
    # headers, then each of the five words in a write of its own
    assert len(reads) >= 4
    text = b"".join(reads)
    positions = [text.index(word) for word in (b"one", b"two", b"three", b"four", b"five")]
    assert positions == sorted(positions)


async def test_the_token_responders_stream_exactly_n_tokens(transport: str) -> None:
    with (
        OpenAIServer(responder=openai_stream_tokens(25, rate_per_s=2000)) as oai,
        AnthropicServer(responder=anthropic_stream_tokens(25, rate_per_s=2000)) as ant,
    ):
        async with openai_client(oai, transport) as client:
            chunks = await openai_chunks(client, stream_options={"include_usage": True})
            whole = await client.chat.completions.create(model="gpt-test", messages=USER)
        async with (
            anthropic_client(ant, transport) as aclient,
            aclient.messages.stream(model="claude-test", max_tokens=100, messages=USER) as stream,
        ):
            texts = [event.text async for event in stream if event.type == "text"]
            message = await stream.get_final_message()
    tokens = [
        c.choices[0].delta.content for c in chunks if c.choices and c.choices[0].delta.content
    ]
    assert len(tokens) == 25
    assert "".join(tokens) == token_text(25) == whole.choices[0].message.content
    assert chunks[-1].usage is not None
    assert chunks[-1].usage.completion_tokens == 25
    assert len(texts) == 25
    assert "".join(texts) == token_text(25)
    assert message.usage.output_tokens == 25
    with pytest.raises(ValueError, match="rate_per_s"):
        openai_stream_tokens(5, rate_per_s=0)


def test_on_sent_hears_of_each_api_request_once_its_stream_is_written() -> None:
    sent: list[tuple[RecordedRequest, float]] = []
    done = threading.Event()

    def note(request: RecordedRequest) -> None:
        sent.append((request, time.perf_counter()))
        done.set()

    delay = 0.02
    with OpenAIServer(responder=openai_stream_tokens(5, 1 / delay), on_sent=note) as server:
        post_raw(server, "/nowhere", {})  # not an API call: not reported
        started = time.perf_counter()
        reads = raw_reads(server, "/v1/chat/completions", {"stream": True, "messages": USER})
        assert done.wait(5)
    assert token_text(5).split()[-1].encode() in b"".join(reads)
    [(request, at)] = sent
    assert request.body["messages"] == USER
    # after the last of the five tokens, four pauses after the first, not on arrival
    assert at - started >= 3 * delay


async def read_stopping_after_two(stream: Any, server: OpenAIServer, received: list[Any]) -> None:
    async for chunk in stream:
        received.append(chunk)
        if len(received) == 2:
            threading.Thread(target=server.stop).start()


async def test_stopping_the_server_cuts_a_paced_stream_short(transport: str) -> None:
    server = OpenAIServer(responder=openai_stream_tokens(1000, rate_per_s=50)).start()
    received: list[Any] = []
    async with openai_client(server, transport) as client:
        stream = await client.chat.completions.create(model="gpt-test", messages=USER, stream=True)
        with pytest.raises(openai.APIConnectionError):
            await read_stopping_after_two(stream, server, received)
    assert 2 <= len(received) < 100


async def stream_then_hang_up(server: OpenAIServer, transport: str) -> None:
    async with openai_client(server, transport) as client:
        stream = await client.chat.completions.create(model="gpt-test", messages=USER, stream=True)
        await stream.__anext__()
        await stream.close()


async def test_a_client_hanging_up_mid_stream_leaves_no_traceback(
    transport: str, capfd: pytest.CaptureFixture[str]
) -> None:
    with OpenAIServer(responder=openai_stream_tokens(200, rate_per_s=200)) as server:
        for _ in range(3):
            await stream_then_hang_up(server, transport)
        await asyncio.sleep(0.3)  # the server's next writes meet the closed connection
        async with openai_client(server, transport) as client:
            completion = await client.chat.completions.create(model="gpt-test", messages=USER)
        assert completion.choices[0].message.content == token_text(200)
    assert "Traceback" not in capfd.readouterr().err
