"""Whether a process still runs, by its pid: for pid files left by an owner that died."""

from __future__ import annotations

import os
from pathlib import Path


def pid_alive(pid: int) -> bool:
    """True while ``pid`` runs; an exited process not yet reaped (a zombie) is not alive."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True  # no /proc here: the signal check above is all there is
    return stat.rpartition(")")[2].split()[:1] != ["Z"]
