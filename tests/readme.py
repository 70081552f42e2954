"""The README's Python examples, by section, for the tests that run them as written."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[1] / "README.md"


def python_blocks(section: str) -> list[str]:
    """The ```python blocks under the ``## section`` heading, in order."""
    text = README.read_text()
    start = text.index(f"## {section}\n")
    end = text.find("\n## ", start + 1)
    body = text[start : end if end != -1 else None]
    blocks = body.split("```python\n")[1:]
    return [block.split("```", 1)[0] for block in blocks]


def run_blocks(section: str, env: Mapping[str, str], monkeypatch: pytest.MonkeyPatch) -> int:
    """Run the section's Python blocks as written, with ``env`` set; how many ran."""
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    blocks = python_blocks(section)
    for block in blocks:
        exec(compile(block, f"README:{section}", "exec"), {"__name__": "readme"})
    return len(blocks)
