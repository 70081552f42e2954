"""Child processes that end with their parent, even when the parent is SIGKILLed.

A stack killed without a chance to stop its children would leave them running,
holding ports and data folders. On Linux the kernel sends each child a signal
when its parent dies (``PR_SET_PDEATHSIG``); elsewhere nothing is set and the
owner's own ``stop()`` remains the only way they end.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import signal
import sys
from collections.abc import Callable

PR_SET_PDEATHSIG = 1


def _load_prctl() -> Callable[..., int] | None:
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
    except OSError:
        return None
    prctl: Callable[..., int] = libc.prctl
    return prctl


# Loaded here, in the parent: the child between fork and exec must not import or load.
_PRCTL = _load_prctl()


def end_with_parent(sig: signal.Signals = signal.SIGTERM) -> Callable[[], None] | None:
    """A ``preexec_fn`` that has the child get ``sig`` when this process dies; None where
    the platform has no such thing. The signal is SIGTERM so the child still stops cleanly.

    The kernel watches the thread that forks, so call ``Popen`` from a thread that
    lives as long as the process (the main thread).
    """
    if _PRCTL is None:
        return None
    prctl = _PRCTL
    parent = os.getpid()
    number = int(sig)

    def set_death_signal() -> None:
        prctl(PR_SET_PDEATHSIG, number, 0, 0, 0)
        if os.getppid() != parent:  # the parent died before the signal was set
            os._exit(1)

    return set_death_signal
