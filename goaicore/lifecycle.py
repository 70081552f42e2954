"""Context managers over a resource's lifetime, so every ``with`` in the library means the same.

``Closing`` is for objects that hold connections from construction (the clients);
``Running`` is for processes and servers that ``start()`` on entry (the local brokers,
the embedded PostgreSQL, the scripted LLM server).
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
