"""Strings a caller gives: every record string is UTF-8, so one that cannot be is refused."""

from __future__ import annotations

import pytest

from goaicore.records.validation import (
    InvalidInputError,
    check_attributes,
    check_conversation_id,
    check_request_id,
    check_text,
)


def test_a_command_line_byte_that_is_not_utf8_is_named_in_a_conversation_id() -> None:
    # `goaicore history $'\xff'`: Python receives the byte as the surrogate escape \udcff.
    with pytest.raises(InvalidInputError) as refused:
        check_conversation_id("p\udcff")
    assert str(refused.value) == (
        "conversation_id is not valid UTF-8 text: character 1 is a lone surrogate (\\udcff): "
        "the byte 0xff, not UTF-8, as a command line passes it"
    )


@pytest.mark.parametrize(
    ("check", "says"),
    [
        (check_conversation_id, "conversation_id is not valid UTF-8"),
        (check_request_id, "request_id is not valid UTF-8"),
        (lambda v: check_text("text", v), "text is not valid UTF-8"),
        (lambda v: check_attributes({"a": v}), "attribute 'a' is not valid UTF-8"),
        (lambda v: check_attributes({v: "x"}), "an attribute's name is not valid UTF-8"),
    ],
)
def test_a_lone_surrogate_is_refused_everywhere(check: object, says: str) -> None:
    assert callable(check)
    with pytest.raises(InvalidInputError, match="lone surrogate") as refused:
        check("ok \ud800")
    assert str(refused.value).startswith(says)


def test_text_outside_the_basic_plane_is_fine() -> None:
    assert check_text("text", "hi 🎭 \U0010ffff") == "hi 🎭 \U0010ffff"
    assert check_conversation_id("théâtre-🎭") == "théâtre-🎭"


@pytest.mark.parametrize(
    "kept",
    ["ref-\u00fc-1", "nulx\ufffdy", "a b", "\u4f1a\u8a71-3", "zero\u200dwidth-joiner", "x" * 256],
)
def test_a_conversation_id_may_be_any_printable_text(kept: str) -> None:
    assert check_conversation_id(kept) == kept


@pytest.mark.parametrize(
    ("refused", "code"),
    [
        ("nulx\x00y", "U+0000 (NUL)"),
        ("tab\tid", "U+0009"),
        ("line\nid", "U+000A"),
        ("del\x7fid", "U+007F"),
        ("c1\x85id", "U+0085"),
        ("sep\u2028id", "U+2028"),
        ("par\u2029id", "U+2029"),
    ],
)
def test_a_conversation_id_with_a_control_character_is_refused(refused: str, code: str) -> None:
    with pytest.raises(InvalidInputError) as raised:
        check_conversation_id(refused)
    assert str(raised.value).startswith(f"conversation_id holds {code} at character ")
