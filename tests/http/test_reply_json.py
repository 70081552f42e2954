"""How a reply becomes an HTTP answer: its status code and body, for every reply status."""

from __future__ import annotations

from goaicore.records import ReplyStatus
from goaicore.records.jsonable import jsonable
from goaicore_store.http.routes import HTTP_STATUS, openapi_document, reply_json
from tests.records.records_samples import CHAT_REPLY_SAMPLES


def test_every_reply_status_has_an_http_status_and_is_documented() -> None:
    assert set(HTTP_STATUS) == set(ReplyStatus)
    documented = openapi_document()["components"]["schemas"]["ChatReply"]["properties"]
    assert documented["status"]["enum"] == [status.value for status in ReplyStatus]


def test_a_cancelled_reply_is_a_200_with_the_text_generated_until_then() -> None:
    cancelled = CHAT_REPLY_SAMPLES["cancelled"]
    assert HTTP_STATUS[cancelled.status] == 200
    assert reply_json(cancelled) == jsonable(cancelled)
    assert reply_json(cancelled)["text"] == "Once upon a time in"


def test_a_failed_reply_is_an_error_with_the_reply_beside_it() -> None:
    rejected = CHAT_REPLY_SAMPLES["rejected"]
    assert HTTP_STATUS[rejected.status] == 422
    answer = reply_json(rejected)
    assert answer["error"]["type"] == "rejected"
    assert answer["error"]["message"] == "unknown tool 'teleport'"
    assert answer["reply"] == jsonable(rejected)
