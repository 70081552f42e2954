"""One dead letter per bad record, whoever reads it: of ``events``, with a store worker
and a projector both reading it, the worker writes it and the projector counts it
skipped; of ``replies``, the projector writes it and every subscriber group skips it."""

from __future__ import annotations

import time

from goaicore.clients import ReplySubscriber
from goaicore.config import Settings
from goaicore.records import UserMessage, new_event
from tests.chat_agent.helpers import a_deployment, snapshot_when
from tests.clients.scripted_responder import BAD_REPLY, publish_replies_around_a_bad_one
from tests.projector.helpers import all_dead_letters, produce, project, publish, query


def test_an_undecodable_event_is_one_dead_letter_with_a_worker_and_a_projector(
    projection: Settings,
) -> None:
    with a_deployment(projection):
        publish(projection, [new_event("dlq-1", UserMessage(text="before"))])
        produce(projection, "events", [(b"dlq-1", b"not avro")])
        publish(projection, [new_event("dlq-1", UserMessage(text="after"))])
        # The worker has passed the bad record once it folded the event after it.
        snapshot_when(projection, "dlq-1", lambda s: len(s.messages) >= 2, timeout=60)
        projector = project(projection)  # and the projector, once caught up
        assert query(projection, "SELECT count(*) FROM conversation_events") == [(2,)]
        deadline = time.monotonic() + 30
        letters = all_dead_letters(projection)
        while not letters and time.monotonic() < deadline:
            time.sleep(0.2)
            letters = all_dead_letters(projection)

    assert projector.skipped == {"bad-magic": 1}
    assert projector.dead_lettered == 0
    assert [(letter.reason, letter.topic, letter.value) for letter in letters] == [
        ("bad-magic", projection.topic("events"), b"not avro")
    ]
    assert letters[0].consumer != "goaicore-projector"
    # The projector reads it back into dead_letters: one row.
    project(projection)
    assert query(projection, "SELECT count(*) FROM dead_letters") == [(1,)]


def test_an_undecodable_reply_is_one_dead_letter_with_a_projector_and_two_subscriber_groups(
    projection: Settings,
) -> None:
    good, bad = publish_replies_around_a_bad_one(projection)
    groups = [
        ReplySubscriber(projection, group_id=group, from_beginning=True)
        for group in ("gateway", "bot")
    ]
    for subscriber in groups:
        with subscriber:
            assert list(subscriber.replies(idle_timeout=3)) == good
            assert subscriber.skipped == 1
    projector = project(projection)
    assert projector.dead_lettered == 1
    letters = all_dead_letters(projection)
    assert [(letter.topic, letter.partition, letter.offset) for letter in letters] == [
        (projection.topic("replies"), bad.partition, bad.offset)
    ]
    assert letters[0].consumer == "goaicore-projector"
    assert letters[0].value == BAD_REPLY
