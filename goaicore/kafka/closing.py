"""A base for clients that hold connections: ``with Client(...) as c:`` closes them."""

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
