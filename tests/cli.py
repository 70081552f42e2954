"""Run the ``goaicore`` command line as a user would: a child process, its output captured."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Mapping


def run_goaicore(
    *args: str, env: Mapping[str, str], timeout: float = 120.0
) -> subprocess.CompletedProcess[str]:
    """``python -m goaicore ARGS`` with exactly ``env``; text output, never raising on exit."""
    return subprocess.run(
        [sys.executable, "-m", "goaicore", *args],
        env=dict(env),
        capture_output=True,
        text=True,
        timeout=timeout,
    )
