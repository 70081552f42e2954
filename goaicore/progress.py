"""A progress bar for long reads of the log, shown only when interactive."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any, TypeVar

T = TypeVar("T")


class ProgressBar:
    """A rich progress bar over records read, or nothing when not interactive."""

    def __init__(self, show: bool, total: int, description: str = "reading the log") -> None:
        self._bar: Any = None
        if show:
            from rich.progress import Progress

            self._bar = Progress(transient=True)
            self._bar.start()
            self._task = self._bar.add_task(description, total=total or None)

    def advance(self) -> None:
        if self._bar is not None:
            self._bar.advance(self._task)

    def update(self, completed: int) -> None:
        """Show ``completed`` records read (counted elsewhere, e.g. by other processes)."""
        if self._bar is not None:
            self._bar.update(self._task, completed=completed)

    def counted(self, items: Iterable[T]) -> Iterator[T]:
        """``items``, advancing the bar by one for each."""
        for item in items:
            self.advance()
            yield item

    def close(self) -> None:
        if self._bar is not None:
            self._bar.stop()
