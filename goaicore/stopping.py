"""A stop that a signal asks for, taken up where the code waits.

A signal handler that raises does so wherever the main thread happens to be: between
a lock's acquire and the ``try`` that releases it, or inside a finalizer, which
swallows the exception ("Exception ignored in ...") and the stop with it, and leaves
the lock held for good: the next thread to log, or a client's network thread, then
waits forever. So a handler only asks (:meth:`Stopping.request`), and code that waits
pauses through :meth:`Stopping.pause`, which raises :class:`StopRequested` right
there, where nothing is half done.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

Pause = Callable[[float], None]
"""How a wait loop sleeps between its tries: ``time.sleep``, or a ``Stopping.pause``."""


class StopRequested(BaseException):
    """A stop was asked for. A BaseException, as KeyboardInterrupt is, so that the
    ``except Exception`` around a try in a wait loop lets it by."""


class Stopping:
    """Set once by a signal handler (or any thread); read by the waits it should end."""

    def __init__(self) -> None:
        self._asked = threading.Event()

    def request(self) -> None:
        """Ask for the stop: safe in a signal handler, and again when already asked."""
        self._asked.set()

    @property
    def requested(self) -> bool:
        return self._asked.is_set()

    def check(self) -> None:
        """Raise StopRequested if the stop was asked for."""
        if self._asked.is_set():
            raise StopRequested

    def pause(self, seconds: float) -> None:
        """Sleep up to ``seconds``; raise StopRequested as soon as the stop is asked for."""
        if self._asked.wait(max(seconds, 0.0)):
            raise StopRequested
