"""The README's configuration table says what the code reads."""

from __future__ import annotations

import pytest

from goaicore.config import VARIABLES
from goaicore.testing.conformance import CHECK_NAMES
from tests.readme import README, python_blocks


def test_readme_documents_every_variable_as_the_code_does() -> None:
    text = README.read_text()
    for variable in VARIABLES:
        row = f"| `{variable.name}` | {variable.default} | "
        assert row in text, f"README row for {variable.name} is missing or differs"
        meaning = variable.meaning.replace("(see the README)", "(below)")
        assert meaning in text, f"README meaning of {variable.name} differs"


def test_library_and_records_examples_run_as_written(capsys: pytest.CaptureFixture[str]) -> None:
    for section in (
        "Conversation library",
        "Records and encoding",
        "Compaction: bounded cost, never a broken history",
        "The conversation store",
    ):
        blocks = python_blocks(section)
        assert blocks, f"no example under {section}"
        for block in blocks:
            exec(compile(block, f"README:{section}", "exec"), {"__name__": "readme"})
    printed = capsys.readouterr().out
    assert "[offline]" in printed
    assert "bad-magic" in printed
    assert " -> " in printed  # the compaction example compacted at least once
    assert "ok True" in printed  # the in-memory store answered a retry with the same reply
    assert "undone: Where am I? | messages: 1" in printed
    assert f"{len(CHECK_NAMES)} checks passed" in printed
