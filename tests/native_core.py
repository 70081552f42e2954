"""Whether the compiled core (``native/``) is here, for the tests that compare it."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from goaicore.records.avro.native import native_module


def rust_toolchain() -> bool:
    """Whether a Rust toolchain is on this machine (make builds the core wherever one is)."""
    return shutil.which("cargo") is not None or (Path.home() / ".cargo/bin/cargo").exists()


needs_core = pytest.mark.skipif(
    native_module() is None and not rust_toolchain(),
    reason="no Rust toolchain here, so make test did not build the compiled core",
)
"""Runs wherever the core should be built: where it is missing there, the test fails."""
