"""Context managers over a resource's lifetime, so every ``with`` in the library means the same.

``Closing`` is for objects that hold connections from construction (the clients);
``Running`` is for processes and servers that ``start()`` on entry (the local brokers,
the embedded PostgreSQL, the scripted LLM server); ``AsyncRunning`` is ``async with``
for the asyncio clients.
"""

from __future__ import annotations

from types import TracebackType
from typing import Self


class Closing:
    """Context-manager protocol over ``close()``."""

    def close(self) -> None:
        raise NotImplementedError

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


class Running(Closing):
    """Context-manager protocol over ``start()`` and ``stop()`` (``close()`` stops too)."""

    def start(self) -> Self:
        raise NotImplementedError

    def stop(self) -> None:
        raise NotImplementedError

    def close(self) -> None:
        self.stop()

    def __enter__(self) -> Self:
        return self.start()


class AsyncRunning:
    """``async with`` over ``await start()`` and ``await close()``: the asyncio clients,
    whose connections open in ``start()`` because a constructor cannot await."""

    async def start(self) -> Self:
        raise NotImplementedError

    async def close(self) -> None:
        raise NotImplementedError

    async def __aenter__(self) -> Self:
        return await self.start()

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()
