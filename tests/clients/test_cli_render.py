"""How the CLI shows records and replies, without a broker."""

from __future__ import annotations

from goaicore.cli.render import describe
from tests.records.records_samples import CHAT_REQUEST_SAMPLES


def test_a_cancel_request_is_described_as_one() -> None:
    cancel = CHAT_REQUEST_SAMPLES["cancel"]
    assert describe(cancel) == f"cancel of request {cancel.request_id} player-42"
    streamed = CHAT_REQUEST_SAMPLES["streamed"]
    assert describe(streamed) == f"request {streamed.request_id} player-42: Tell me a story"
