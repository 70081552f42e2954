"""The provider protocol: one LLM call from a neutral request to a neutral completion."""

from __future__ import annotations

import asyncio
import contextlib
import weakref
from abc import ABC, abstractmethod
from collections.abc import AsyncGenerator, Awaitable, Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, Generic, Literal, Protocol, TypeVar, runtime_checkable
from urllib.parse import urlsplit

from goaicore.conversation.errors import ContextLengthError, ProviderError
from goaicore.conversation.messages import JSONDict, Message
from goaicore.conversation.progress import TextSink
from goaicore.conversation.tools import Tool
from goaicore.extras import require
from goaicore.records.types import Usage
from goaicore.settings.postgres import mask_password

# Normalised finish reasons. Any other value is the provider's own, unknown reason.
STOP = "stop"
TOOL_CALLS = "tool_calls"
LENGTH = "length"
CONTENT_FILTER = "content_filter"
CONTEXT_LENGTH = "context_length"
CANCELLED = "cancelled"
"""Not the provider's: the caller stopped the call (the turn keeps what was generated)."""


@dataclass(frozen=True, slots=True)
class CompletionRequest:
    """What one LLM call sends: the leading system prompts, the history, the tools."""

    system: tuple[str, ...]
    messages: Sequence[Message]
    tools: Sequence[Tool] = ()


@dataclass(frozen=True, slots=True)
class Completion:
    """What one LLM call returned: the assistant message (raw JSON kept) and its metadata.

    ``finish_reason`` is normalised (``stop``, ``tool_calls``, ``length``,
    ``content_filter``, ``context_length``, or the provider's own unknown value);
    ``raw_finish_reason`` is the provider's word for it.
    """

    message: Message
    finish_reason: str
    raw_finish_reason: str | None
    usage: Usage
    model: str
    cache_read_tokens: int = 0
    """Prompt tokens read from the provider's prompt cache (priced lower; in ``usage`` too)."""
    cache_write_tokens: int = 0
    """Prompt tokens written to it (Anthropic prices them higher; in ``usage`` too)."""


@runtime_checkable
class Provider(Protocol):
    """An LLM behind one API. ``name`` selects the wire shape and tags stored messages."""

    @property
    def name(self) -> str: ...

    @property
    def model(self) -> str: ...

    async def complete(self, request: CompletionRequest) -> Completion:
        """Make one call; raise ``ProviderError`` / ``ContextLengthError`` on failure."""
        ...


async def stream_or_complete(
    provider: Provider, request: CompletionRequest, on_text: TextSink | None
) -> Completion:
    """One call, its text to ``on_text`` as it comes: streamed where the provider has a
    ``stream`` (see :class:`SdkProvider`), else its whole text as one piece; without
    ``on_text``, the call made whole."""
    if on_text is None:
        return await provider.complete(request)
    stream = getattr(provider, "stream", None)
    if stream is None:
        completion = await provider.complete(request)
        if completion.message.text:
            on_text(completion.message.text)
        return completion
    streamed: Completion = await stream(request, on_text)
    return streamed


class StreamAccumulator(ABC):
    """Reads one streamed response, event by event, back into the API's whole response."""

    @abstractmethod
    def feed(self, event: Any, on_text: TextSink) -> None:
        """Take one streamed event (decoded JSON); text it carries goes to ``on_text``."""

    @abstractmethod
    def response(self) -> JSONDict:
        """The whole response the events make, in the API's non-streamed shape."""


class _Closable(Protocol):
    async def close(self) -> None: ...


C = TypeVar("C", bound=_Closable)


@dataclass
class PerLoopClients(Generic[C]):
    """One SDK client per event loop, closed when that loop shuts down.

    An async HTTP client's pooled connections belong to the loop that opened them, so a
    client must not be shared between loops (each ``asyncio.run``, each test, the loop
    that runs the sync API). Each client is closed from inside its own loop when the
    loop finalises its async generators (``asyncio.run`` does), instead of being
    garbage-collected later while another loop runs.
    """

    factory: Callable[[], C]
    first: C | None = None
    _clients: weakref.WeakKeyDictionary[
        asyncio.AbstractEventLoop, tuple[C, AsyncGenerator[None, None]]
    ] = field(default_factory=weakref.WeakKeyDictionary)

    async def get(self) -> C:
        loop = asyncio.get_running_loop()
        entry = self._clients.get(loop)
        if entry is not None:
            return entry[0]
        if self.first is not None:
            client, self.first = self.first, None
        else:
            client = self.factory()
        closer = _close_at_loop_shutdown(client)
        await closer.__anext__()
        self._clients[loop] = (client, closer)
        return client

    async def aclose(self) -> None:
        """Close the running loop's client now."""
        entry = self._clients.pop(asyncio.get_running_loop(), None)
        if entry is not None:
            await entry[1].aclose()


Transport = Literal["httpx", "aiohttp"]
"""The HTTP client under an SDK: its default (httpx), or its aiohttp transport."""


def http_client_options(
    sdk: Any, transport: Transport, base_url: str | None = None
) -> dict[str, Any]:
    """The SDK client's ``http_client`` for ``transport``; none for the SDK's default.

    With many calls at once the aiohttp transport answers several times as many per
    second as the SDKs' default httpx pool, for less CPU each (docs/operations.md). It
    refuses a base URL with a user and password beside the SDK's Authorization
    header, so such a URL keeps the default client.
    """
    if transport == "httpx":
        return {}
    if base_url is not None and "@" in urlsplit(base_url).netloc:
        return {}
    aiohttp_client = getattr(sdk, "DefaultAioHttpClient", None)
    if aiohttp_client is None:
        return {}
    try:
        return {"http_client": aiohttp_client()}
    except RuntimeError:  # the SDK was installed without its aiohttp extra
        return {}


class SdkClients:
    """One provider SDK's async HTTP client per event loop, and the SDK's two errors.

    The SDK (``module``, installed with goaicore's ``extra``) is imported here, when a
    provider is built; the first client is built now, so a missing key fails at once.
    """

    def __init__(
        self, module: str, extra: str, client_class: str, transport: Transport, **options: Any
    ) -> None:
        sdk = require(module, extra)
        self.status_error: type[Exception] = sdk.APIStatusError
        self.connection_error: type[Exception] = sdk.APIConnectionError
        self.api_error: type[Exception] = sdk.APIError
        self.stream_class: Any = sdk.AsyncStream[object]
        client_type = getattr(sdk, client_class)

        def client() -> Any:
            http = http_client_options(sdk, transport, options.get("base_url"))
            return client_type(**options, **http)

        self.clients: PerLoopClients[Any] = PerLoopClients(client, first=client())

    async def call_json(
        self,
        provider: str,
        request: Callable[[Any], Awaitable[Any]],
        is_context_length: Callable[[Any], bool],
    ) -> Any:
        """The JSON body of ``request(client)``, its errors mapped to ours."""
        client = await self.clients.get()
        return await response_json(
            provider,
            request(client),
            status_error=self.status_error,
            connection_error=self.connection_error,
            is_context_length=is_context_length,
        )

    async def stream_events(
        self,
        provider: str,
        path: str,
        body: JSONDict,
        is_context_length: Callable[[Any], bool],
        feed: Callable[[Any], None],
    ) -> None:
        """Post ``body`` to ``path`` as a streaming request and ``feed`` each event (decoded
        JSON) as it arrives; every error, also one in the middle of the stream, is ours."""
        client = await self.clients.get()
        with mapped_errors(provider, self.status_error, self.connection_error, is_context_length):
            events = await client.post(
                path, cast_to=object, body=body, stream=True, stream_cls=self.stream_class
            )
            try:
                async for event in events:
                    try:
                        feed(event)
                    except (KeyError, IndexError, TypeError, ValueError) as exc:
                        raise _Unreadable(exc) from exc
            except (self.status_error, self.connection_error, _Unreadable):
                raise
            except self.api_error as exc:  # an error event inside the stream
                raise ProviderError(f"{provider}: {exc}", provider=provider) from exc
            except Exception as exc:  # the HTTP client's own: the connection broke mid-stream
                raise ProviderError(
                    f"{provider}: the stream broke off ({type(exc).__name__})", provider=provider
                ) from exc
            finally:
                await events.close()

    async def aclose(self) -> None:
        """Close the HTTP client of the running event loop (others close with their loop)."""
        await self.clients.aclose()


class _Unreadable(Exception):
    """A streamed event that is not the API's shape (the SDK's own errors aside)."""

    def __init__(self, error: Exception) -> None:
        super().__init__(f"{type(error).__name__}: {error}")


class SdkProvider(ABC):
    """A provider behind an official SDK: model and sampling options, one client per loop.

    A subclass names its SDK and the API path, and says how to build a request body
    and read the response; the call, its error mapping and the client's lifetime are
    the same for every SDK.

    The body is built as the API's JSON, so it is posted with the client's generic
    ``post`` (the SDKs' documented way to send a body as is) rather than through the
    typed ``create``, which walks every message of the history against its parameter
    types before sending: tens of milliseconds a call once a history is long, on the
    path of every turn. Retries, timeouts, headers and errors are the client's own.

    ``transport="aiohttp"`` sends through the SDK's aiohttp transport, for many calls
    at once (the store worker uses it). Close such a provider with :meth:`aclose` in
    the loop that used it: aiohttp warns about a session it finds open when it is
    collected, as a dropped provider's can be before its loop closes it.
    """

    name: ClassVar[str]
    sdk: ClassVar[str | None] = None
    """The SDK's module (and goaicore's extra that brings it), where not ``name``."""
    client_class: ClassVar[str]
    path: ClassVar[str]
    default_max_tokens: ClassVar[int | None] = None

    def __init__(
        self,
        model: str,
        *,
        api_key: str | None = None,
        base_url: str | None = None,
        timeout: float = 60.0,
        max_retries: int = 2,
        temperature: float | None = None,
        max_tokens: int | None = None,
        extra_body: JSONDict | None = None,
        transport: Transport = "httpx",
    ) -> None:
        self.model = model
        self.base_url = base_url
        self.temperature = temperature
        self.max_tokens = max_tokens if max_tokens is not None else self.default_max_tokens
        self.extra_body = dict(extra_body or {})
        self._sdk = SdkClients(
            self.sdk or self.name,
            self.sdk or self.name,
            self.client_class,
            transport,
            api_key=api_key,
            base_url=base_url,
            timeout=timeout,
            max_retries=max_retries,
        )

    def __repr__(self) -> str:
        """The model and where it is called; never the API key (the SDK client holds it)."""
        where = f", base_url={mask_password(self.base_url)!r}" if self.base_url else ""
        return f"{type(self).__name__}(model={self.model!r}{where})"

    @abstractmethod
    def build_request(self, request: CompletionRequest) -> JSONDict:
        """The API request body for ``request``."""

    @abstractmethod
    def parse_response(self, data: Any) -> Completion:
        """The completion in an API response body."""

    @abstractmethod
    def accumulator(self) -> StreamAccumulator:
        """A fresh reader of one streamed response."""

    stream_options: ClassVar[JSONDict] = {"stream": True}
    """What a streaming request adds to the body."""

    @staticmethod
    @abstractmethod
    def is_context_length(exc: Any) -> bool:
        """Whether an HTTP status error says the prompt was too long for the model."""

    def unreadable(self, exc: Exception) -> ProviderError:
        """The error for a response body that is not the API's shape."""
        return ProviderError(
            f"{self.name}: unreadable response ({type(exc).__name__}: {exc})", provider=self.name
        )

    async def complete(self, request: CompletionRequest) -> Completion:
        body = self.build_request(request)
        data = await self._sdk.call_json(
            self.name,
            lambda client: client.post(self.path, cast_to=object, body=body),
            self.is_context_length,
        )
        return self.parse_response(data)

    async def stream(self, request: CompletionRequest, on_text: TextSink) -> Completion:
        """The same call as ``complete``, streamed: the events are read back into the
        whole response, which is parsed as ``complete`` parses it (so the message stored
        is the same either way)."""
        body = {**self.build_request(request), **self.stream_options}
        accumulator = self.accumulator()
        try:
            await self._sdk.stream_events(
                self.name,
                self.path,
                body,
                self.is_context_length,
                lambda event: accumulator.feed(event, on_text),
            )
            data = accumulator.response()
        except (_Unreadable, KeyError, IndexError, TypeError, ValueError) as exc:
            raise self.unreadable(exc) from None
        return self.parse_response(data)

    async def aclose(self) -> None:
        """Close the HTTP client of the running event loop (others close with their loop)."""
        await self._sdk.aclose()


async def _close_at_loop_shutdown(client: _Closable) -> AsyncGenerator[None, None]:
    try:
        yield
    finally:
        await client.close()


async def response_json(
    provider: str,
    call: Awaitable[Any],
    *,
    status_error: type[Exception],
    connection_error: type[Exception],
    is_context_length: Callable[[Any], bool],
) -> Any:
    """The JSON body an SDK ``post(..., cast_to=object)`` call returns, its errors mapped to
    ours (see :func:`mapped_errors`)."""
    with mapped_errors(provider, status_error, connection_error, is_context_length):
        try:
            data = await call
        except ValueError as exc:
            raise ProviderError(
                f"{provider}: response is not JSON: {exc}", provider=provider
            ) from exc
    if not isinstance(data, dict):
        shown = repr(data)[:200]
        raise ProviderError(
            f"{provider}: response is not a JSON object: {shown}", provider=provider
        )
    return data


@contextlib.contextmanager
def mapped_errors(
    provider: str,
    status_error: type[Exception],
    connection_error: type[Exception],
    is_context_length: Callable[[Any], bool],
) -> Iterator[None]:
    """An SDK's errors as ours. Both SDKs raise an HTTP status error (with ``status_code``
    and ``message``) and a connection error; a status error the provider names as an
    overlong prompt becomes :class:`ContextLengthError`, so a compactor can shorten the
    history and retry."""
    try:
        yield
    except status_error as exc:
        status: Any = exc
        error = ContextLengthError if is_context_length(exc) else ProviderError
        raise error(
            f"{provider}: HTTP {status.status_code}: {status.message}",
            provider=provider,
            status_code=status.status_code,
        ) from exc
    except connection_error as exc:
        raise ProviderError(f"{provider}: {exc}{_root_cause(exc)}", provider=provider) from exc


def _root_cause(exc: BaseException) -> str:
    """The kind of error the HTTP client saw, where the SDK's words are vaguer ("Request
    timed out." for a refused connection under the aiohttp transport). Only its type:
    the message goes into replies and the log, and the error's own text can name
    internal addresses or a whole URL."""
    root = exc
    for _ in range(16):  # a chain is a few links; a cycle must not hold the turn
        if root.__cause__ is None:
            break
        root = root.__cause__
    return "" if root is exc else f" ({type(root).__name__})"


def as_int(value: Any) -> int:
    """A token count from provider JSON, where absent or null means zero."""
    return value if isinstance(value, int) and not isinstance(value, bool) else 0
