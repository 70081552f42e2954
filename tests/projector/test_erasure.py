"""Erasure in PostgreSQL: the projector leaves an erased conversation's earlier rows their
skeleton only, in the transaction that writes the erasure, and touches nothing else."""

from __future__ import annotations

import dataclasses
import json

from goaicore.config import Settings
from goaicore.records import (
    ChatReply,
    ConversationErased,
    ReplyStatus,
    Usage,
    UserMessage,
    new_event,
)
from goaicore.records.avro.api import decode_event, encode_key
from goaicore.sealing.content import MARK
from goaicore.sealing.keys import DataKey, MasterKeys, wrap
from goaicore.sealing.records import seal_event
from tests.projector.helpers import produce, project, publish, publish_replies, query
from tests.projector.sessions import game_session

SECRET = "Which theatres are near the station?"


def test_an_erasure_leaves_earlier_rows_their_skeleton_and_later_ones_whole(
    projection: Settings,
) -> None:
    item = json.dumps({"content": SECRET, "role": "user"})  # as the provider's API holds it
    user = UserMessage(text=SECRET, raw_json=item, provider="openai-responses")
    asked = dataclasses.replace(new_event("gone", user), causation_id="r1" * 16)
    erasure = new_event("gone", ConversationErased(reason="GDPR"))
    fresh = json.dumps({"content": "a fresh start", "role": "user"})
    later = new_event(
        "gone", UserMessage(text="a fresh start", raw_json=fresh, provider="openai-responses")
    )
    publish(projection, [*game_session("gone"), asked, *game_session("kept"), erasure, later])
    reply = ChatReply(
        request_id="r1" * 16,
        conversation_id="gone",
        status=ReplyStatus.OK,
        text="Royal Hall",
        usage=Usage(prompt_tokens=9, completion_tokens=2, total_tokens=11),
        latency_ms=12,
    )
    publish_replies(projection, [reply])
    project(projection)

    rows = query(
        projection,
        "SELECT conversation_id, body_type, body, message_text, avro FROM conversation_events"
        " ORDER BY conversation_id, log_offset",
    )
    gone = [r for r in rows if r[0] == "gone"]
    assert [r[1] for r in gone[-2:]] == ["ConversationErased", "UserMessage"]
    for _, _, body, text, avro in gone[:-2]:
        assert text in (None, MARK)
        assert SECRET not in str(body)
        assert "Harrogate" not in str(body)
        assert "Harrogate" not in str(decode_event(bytes(avro)))
    usage = [r[2]["usage"] for r in gone if r[1] == "AssistantTurn" and r[2].get("usage")]
    assert usage[0]["prompt_tokens"] == 120  # the audit skeleton stays
    erased_ask = gone[-3][2]
    assert (erased_ask["text"], erased_ask["raw_json"]) == (MARK, None)
    assert erased_ask["provider"] == "openai-responses"  # whose format it was: skeleton
    assert gone[-1][3] == "a fresh start"
    assert gone[-1][2]["raw_json"] == fresh
    kept = [r for r in rows if r[0] == "kept"]
    assert kept[1][3] == SECRET
    assert query(
        projection,
        "SELECT conversation_id FROM conversation_events"
        " WHERE search_vector @@ plainto_tsquery('english', 'theatres station')",
    ) == [("kept",)]
    assert query(
        projection, "SELECT text, prompt_tokens FROM chat_replies WHERE conversation_id = 'gone'"
    ) == [(MARK, 9)]


def test_sealed_events_are_projected_opened_and_erased_like_any_other(
    projection: Settings,
) -> None:
    masters = MasterKeys.generate()
    key = DataKey.generate()
    produce(projection, "keys", [(b"sealed", encode_key(wrap(masters, "sealed", key)))])
    said = new_event("sealed", UserMessage(text=SECRET))
    publish(projection, [seal_event(said, key)])
    opened = projection.with_overrides(master_keys=masters.to_text())
    project(opened)
    [(body, text, avro)] = query(opened, "SELECT body, message_text, avro FROM conversation_events")
    assert (body["text"], text) == (SECRET, SECRET)
    assert decode_event(bytes(avro)) == said  # stored opened: folded without keys

    publish(projection, [new_event("sealed", ConversationErased(reason="GDPR"))])
    project(opened)
    rows = query(opened, "SELECT message_text, avro FROM conversation_events ORDER BY 2")
    assert SECRET not in str(rows)
    assert all(SECRET not in str(decode_event(bytes(avro))) for _, avro in rows)
