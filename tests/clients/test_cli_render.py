"""How the CLI shows records and replies, without a broker."""

from __future__ import annotations

import pytest

from goaicore.cli.chat import print_reply
from goaicore.cli.render import describe
from tests.records.records_samples import CHAT_REPLY_SAMPLES, CHAT_REQUEST_SAMPLES


def test_a_cancel_request_is_described_as_one() -> None:
    cancel = CHAT_REQUEST_SAMPLES["cancel"]
    assert describe(cancel) == f"cancel of request {cancel.request_id} player-42"
    streamed = CHAT_REQUEST_SAMPLES["streamed"]
    assert describe(streamed) == f"request {streamed.request_id} player-42: Tell me a story"


def test_a_cancelled_reply_prints_its_text_and_is_not_a_failure(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert print_reply(CHAT_REPLY_SAMPLES["cancelled"]) == 0
    printed = capsys.readouterr()
    assert printed.out == "Once upon a time in\n"
    assert "cancelled" in printed.err
    assert print_reply(CHAT_REPLY_SAMPLES["error"]) == 1
    assert "error: provider unavailable" in capsys.readouterr().err
