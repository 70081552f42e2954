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

import contextlib
import os
import select
import time
from collections.abc import Callable
from typing import Protocol

Pause = Callable[[float], None]
"""How a wait loop sleeps between its tries: ``time.sleep``, or a ``Stopping.pause``."""


class StopFlag(Protocol):
    """What a loop that runs until stopped reads: a ``threading.Event`` or a Stopping."""

    def is_set(self) -> bool: ...

    def wait(self, timeout: float | None = None) -> bool: ...


class StopRequested(BaseException):
    """A stop was asked for. A BaseException, as KeyboardInterrupt is, so that the
    ``except Exception`` around a try in a wait loop lets it by."""


class Stopping:
    """Asked once by a signal handler (or any thread); read by the waits it should end.

    Asking takes no lock: a handler that took one (``threading.Event.set`` does) would
    wait forever for the main thread it interrupted, were that holding it. It sets a
    flag and writes a byte to a pipe of its own, which wakes a :meth:`pause` at once.
    """

    def __init__(self) -> None:
        self._asked = False
        self._wake_read, self._wake_write = os.pipe()
        os.set_blocking(self._wake_write, False)

    def request(self) -> None:
        """Ask for the stop: safe in a signal handler, and again when already asked."""
        self._asked = True
        with contextlib.suppress(OSError):  # the pipe full, or closed: asked all the same
            os.write(self._wake_write, b"\0")

    def is_set(self) -> bool:
        """Asked for (as ``threading.Event.is_set``: a Stopping serves where one does)."""
        return self._asked

    def wait(self, timeout: float | None = None) -> bool:
        """Wait up to ``timeout`` s (None: for good) for the ask; whether it came."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while not self._asked:
            left = None if deadline is None else deadline - time.monotonic()
            if left is not None and left <= 0:
                break
            select.select([self._wake_read], [], [], left)  # readable from the first ask on
        return self._asked

    def check(self) -> None:
        """Raise StopRequested if the stop was asked for."""
        if self._asked:
            raise StopRequested

    def pause(self, seconds: float) -> None:
        """Sleep up to ``seconds``; raise StopRequested as soon as the stop is asked for."""
        if self.wait(seconds):
            raise StopRequested

    def close(self) -> None:
        for fd in (self._wake_read, self._wake_write):
            with contextlib.suppress(OSError):
                os.close(fd)
        self._wake_read = self._wake_write = -1

    def __del__(self) -> None:
        if getattr(self, "_wake_read", -1) >= 0:
            self.close()
