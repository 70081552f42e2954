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
