"""The scripted-server backends of ``tests.core``, for compaction through real SDKs."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from goaicore.testing import AnthropicServer, OpenAIServer
from tests.core.conftest import Backend


@pytest.fixture(params=["openai", "anthropic"])
def backend(request: pytest.FixtureRequest) -> Iterator[Backend]:
    server: OpenAIServer | AnthropicServer = (
        OpenAIServer() if request.param == "openai" else AnthropicServer()
    )
    with server:
        yield Backend(request.param, server)


@pytest.fixture
def summary_server() -> Iterator[OpenAIServer]:
    """A second OpenAI-compatible server: the cheaper model that writes summaries."""
    with OpenAIServer() as server:
        yield server
