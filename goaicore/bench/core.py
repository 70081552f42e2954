"""Benchmarks of the conversation core: state size, and library overhead per turn.

Conversations are built turn by turn through ``Chat`` with realistic provider replies
(raw messages as the APIs return them, a tool call every third turn, a context event
every fifth) and varied synthetic text (words drawn from a fixed-seed generator, about
as compressible as prose), so the sizes are those of real stored states.
"""

from __future__ import annotations

import asyncio
import random
import statistics
import time
from collections.abc import Sequence
from typing import Any

from goaicore.bench.registry import Measurement, suite
from goaicore.conversation.chat import Chat
from goaicore.conversation.messages import Message
from goaicore.conversation.providers.anthropic import AnthropicProvider
from goaicore.conversation.providers.base import Completion, CompletionRequest
from goaicore.conversation.providers.openai import OpenAIProvider
from goaicore.conversation.state import DEFAULT_GZIP_THRESHOLD, encode_state
from goaicore.conversation.tools import tool
from goaicore.testing import AnthropicServer, OpenAIServer, anthropic_echo, openai_echo
from goaicore.testing.anthropic_server import anthropic_reply
from goaicore.testing.openai_server import openai_reply

SUITE = "core"
TURN_COUNTS = (10, 100, 1000)
_SYLLABLES = [*"kaloremisatoneperadofuhabe", "ch", "st", "ar", "en", "or", "th", "in"]
_COMMON = ["the", "a", "of", "to", "and", "in", "is", "it", "for", "on", "at", "Leeds", "York"]
_VOCABULARY = [
    "".join(random.Random(i).choices(_SYLLABLES, k=2 + i % 4)) for i in range(800)
] + _COMMON


def _sentence(seed: int, low: int, high: int) -> str:
    rng = random.Random(seed)
    words = rng.choices(_VOCABULARY, k=rng.randint(low, high))
    return " ".join(words).capitalize() + "."


@tool
def get_score(team: str) -> dict[str, Any]:
    """Current score of a team."""
    return {"team": team, "home": 2, "away": 1, "minute": 67}


class CannedProvider:
    """A real provider minus its HTTP call.

    Each call renders the full request body with the real provider's ``build_request``
    and reads a canned response body with its ``parse_response``; only the SDK's
    serialisation and the network round trip are left out.
    """

    def __init__(self, real: OpenAIProvider | AnthropicProvider, turn: int = 0) -> None:
        self.real = real
        self.name = real.name
        self.model = real.model
        self.calls = 0

    async def complete(self, request: CompletionRequest) -> Completion:
        self.real.build_request(request)
        self.calls += 1
        body = _response(self.name, self.calls, tool_step=_wants_tool(request))
        return self.real.parse_response(body)


def _wants_tool(request: CompletionRequest) -> bool:
    last = request.messages[-1]
    return last.role == "user" and "score" in last.text


def _response(provider: str, n: int, *, tool_step: bool) -> Any:
    if provider == "openai":
        if tool_step:
            return openai_reply(tool_calls=[(f"call_{n:06d}", "get_score", {"team": "Leeds"})]).body
        return openai_reply(_sentence(n, 20, 60), usage=(900, 40)).body
    if tool_step:
        return anthropic_reply(tool_uses=[(f"toolu_{n:06d}", "get_score", {"team": "Leeds"})]).body
    return anthropic_reply(_sentence(n, 20, 60), usage=(900, 40)).body


def _provider(name: str) -> OpenAIProvider | AnthropicProvider:
    if name == "openai":
        return OpenAIProvider("gpt-4o-mini", api_key="bench")
    return AnthropicProvider("claude-bench", api_key="bench")


def _user_text(turn: int) -> str:
    if turn % 3 == 0:
        return f"What is the score for Leeds right now? {_sentence(-turn, 3, 12)}"
    return _sentence(-turn, 5, 25)


async def _build(chat: Chat, turns: int) -> list[Message]:
    messages: list[Message] = []
    for turn in range(turns):
        if turn % 5 == 4:
            messages.append(Message.context(f"Player checked in at {_sentence(turn, 2, 6)}"))
        result = await chat.arun_turn(messages, user=_user_text(turn), tools=[get_score])
        messages = result.messages
    return messages


def _time_turns(chat: Chat, state: bytes, repeat: int) -> float:
    """Median seconds of one ``chat_with_state`` turn on ``state`` (state kept fixed)."""

    async def run() -> list[float]:
        samples = []
        for i in range(repeat):
            t0 = time.perf_counter()
            await chat.achat_with_state(state, user=_user_text(i * 3 + 1), tools=[get_score])
            samples.append(time.perf_counter() - t0)
        return samples

    return statistics.median(asyncio.run(run()))


def _sdk_round_trip(provider: str, turns: int, repeat: int) -> float:
    """Median seconds of a turn through the real SDK to a local instant server."""
    server: OpenAIServer | AnthropicServer
    if provider == "openai":
        server = OpenAIServer(responder=openai_echo).start()
        real: OpenAIProvider | AnthropicProvider = OpenAIProvider(
            "gpt-4o-mini", api_key="bench", base_url=server.base_url
        )
    else:
        server = AnthropicServer(responder=anthropic_echo).start()
        real = AnthropicProvider("claude-bench", api_key="bench", base_url=server.base_url)
    try:
        messages = asyncio.run(_build(Chat(CannedProvider(real)), turns))
        chat = Chat(real)
        state = chat.write_state(messages)
        _time_turns(chat, state, 3)  # warm the connection
        return _time_turns(chat, state, repeat)
    finally:
        server.stop()


@suite(SUITE)
def core() -> list[Measurement]:
    rows: list[Measurement] = []
    histories: dict[tuple[str, int], list[Message]] = {}
    for provider in ("openai", "anthropic"):
        for turns in TURN_COUNTS:
            chat = Chat(CannedProvider(_provider(provider)))
            histories[provider, turns] = asyncio.run(_build(chat, turns))

    for turns in TURN_COUNTS:
        messages = histories["openai", turns]
        plain = encode_state(messages, "openai", gzip_threshold=None)
        packed = encode_state(messages, "openai", gzip_threshold=DEFAULT_GZIP_THRESHOLD)
        params = {"turns": turns, "messages": len(messages), "provider": "openai"}
        note = "a tool call every 3rd turn, a context event every 5th; OpenAI raw messages"
        rows.append(Measurement(SUITE, "state size, plain JSON", len(plain), "bytes", params, note))
        rows.append(
            Measurement(
                SUITE,
                "state size, gzip",
                len(packed),
                "bytes",
                params,
                f"gzip level 6 above {DEFAULT_GZIP_THRESHOLD} B; {len(plain) / len(packed):.1f}x",
            )
        )

    for provider in ("openai", "anthropic"):
        for turns in TURN_COUNTS:
            chat = Chat(CannedProvider(_provider(provider)))
            state = chat.write_state(histories[provider, turns])
            repeat = {10: 300, 100: 100, 1000: 20}[turns]
            seconds = _time_turns(chat, state, repeat)
            rows.append(
                Measurement(
                    SUITE,
                    "library overhead per turn",
                    seconds * 1e6,
                    "µs",
                    {"provider": provider, "history_turns": turns},
                    "median of chat_with_state on a fixed state: decode, validate, render the "
                    "real request body, parse a canned response, encode; no SDK, no HTTP",
                )
            )

    for provider in ("openai", "anthropic"):
        seconds = _sdk_round_trip(provider, 10, 50)
        rows.append(
            Measurement(
                SUITE,
                "turn through the SDK to a local instant server",
                seconds * 1e6,
                "µs",
                {"provider": provider, "history_turns": 10},
                "for scale: the same turn with the SDK and a loopback HTTP call",
            )
        )
    return rows


def summary(rows: Sequence[Measurement]) -> str:
    """One line per measurement, for notes and logs."""
    return "\n".join(f"{m.name} {m.params}: {m.value:,.1f} {m.unit}" for m in rows)
