"""The README, the docs, docstrings and comments name only files and modules that exist."""

from __future__ import annotations

import importlib
import importlib.util
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PROSE = [ROOT / "README.md", ROOT / "services" / "README.md", ROOT / "schemas" / "README.md"]
PROSE += sorted((ROOT / "docs").glob("*.md"))
CODE = sorted((ROOT / "goaicore").rglob("*.py")) + sorted((ROOT / "services").rglob("*.py"))
CODE += sorted((ROOT / "tests").rglob("*.py")) + sorted((ROOT / "examples").rglob("*.py"))

# A repository path: a top-level folder of this repository, then a file or folder.
PATH = re.compile(
    r"(?<![\w/.~-])((?:goaicore|services|tests|docs|deploy|schemas|examples)/[\w./-]*\w/?)"
)
# A dotted name of this project in backticks (prose and docstrings quote code so):
# a module, maybe followed by an attribute.
DOTTED = re.compile(r"`((?:goaicore|goaicore_store|goaicore_projector)(?:\.\w+)+)")
# Paths in another repository: the OpenAI Agents SDK's own tests (in its sdist), which
# goaicore/testing/agents_sdk_suite.py runs.
ELSEWHERE = ("tests/memory/",)
# Dotted names that are not Python: the services' entry point group, Avro full names,
# a record header's name (goaicore.forwarded-from, up to its dash).
NOT_MODULES = {
    "goaicore.services",
    "goaicore.UserMessage",
    "goaicore.GameEvent",
    "goaicore.forwarded",
}


def _texts() -> list[tuple[Path, str]]:
    return [(path, path.read_text(encoding="utf-8")) for path in PROSE + CODE]


def _resolves(dotted: str) -> bool:
    """A module, or an attribute of the longest module prefix."""
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        name = ".".join(parts[:cut])
        try:
            found = importlib.util.find_spec(name) is not None
        except ModuleNotFoundError:
            found = False
        if not found:
            continue
        value: object = importlib.import_module(name)
        for attribute in parts[cut:]:
            if not hasattr(value, attribute):
                return False
            value = getattr(value, attribute)
        return True
    return False


def test_every_repository_path_named_exists() -> None:
    missing = sorted(
        {
            f"{path.relative_to(ROOT)}: {named}"
            for path, text in _texts()
            for named in PATH.findall(text)
            if not named.startswith(ELSEWHERE) and not (ROOT / named.rstrip("/.")).exists()
        }
    )
    assert missing == []


def test_every_module_named_exists() -> None:
    missing = sorted(
        {
            f"{path.relative_to(ROOT)}: {named}"
            for path, text in _texts()
            for named in DOTTED.findall(text)
            if named not in NOT_MODULES and not _resolves(named)
        }
    )
    assert missing == []
