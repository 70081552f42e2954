"""Local servers speaking the OpenAI (chat completions and Responses) and Anthropic wire
formats, scripted per test.

They let tests (and benchmarks, as an instant LLM with ``responder=openai_echo``) drive
the real SDK clients over HTTP with no network and no key. A request with
``"stream": true`` gets its scripted response as the API's event stream, optionally
paced (``chunk_delay``); ``openai_stream_tokens`` / ``responses_stream_tokens`` /
``anthropic_stream_tokens`` are responders streaming a text of N tokens at a fixed rate,
a model of known speed.
"""

from goaicore.testing.anthropic_server import (
    AnthropicServer,
    anthropic_context_length_error,
    anthropic_echo,
    anthropic_error,
    anthropic_reply,
    anthropic_stream_tokens,
)
from goaicore.testing.openai_server import (
    OpenAIServer,
    openai_context_length_error,
    openai_echo,
    openai_error,
    openai_reply,
    openai_stream_tokens,
)
from goaicore.testing.responses_server import (
    ResponsesServer,
    responses_context_length_error,
    responses_echo,
    responses_error,
    responses_reply,
    responses_stream_tokens,
)
from goaicore.testing.server import RecordedRequest, Responder, ScriptedResponse, ScriptedServer

__all__ = [
    "AnthropicServer",
    "OpenAIServer",
    "RecordedRequest",
    "Responder",
    "ResponsesServer",
    "ScriptedResponse",
    "ScriptedServer",
    "anthropic_context_length_error",
    "anthropic_echo",
    "anthropic_error",
    "anthropic_reply",
    "anthropic_stream_tokens",
    "openai_context_length_error",
    "openai_echo",
    "openai_error",
    "openai_reply",
    "openai_stream_tokens",
    "responses_context_length_error",
    "responses_echo",
    "responses_error",
    "responses_reply",
    "responses_stream_tokens",
]
