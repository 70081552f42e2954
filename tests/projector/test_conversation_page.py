"""The console's reads: filtered keyset pages of conversations, and the dead letters."""

from __future__ import annotations

import base64
import json
from datetime import timedelta

import pytest

from goaicore.config import Settings
from goaicore.errors import InputError
from goaicore.projection import (
    ConversationFilter,
    ConversationPage,
    DeadLetterRow,
    connect,
    conversation_page,
    conversations,
    dead_letters,
)
from goaicore.projection.db import Connection
from goaicore.records import (
    CompactionApplied,
    ConversationEvent,
    EventBody,
    GameEvent,
    MetadataSet,
    TurnFailed,
    UserMessage,
    new_event,
)
from tests.projector.helpers import (
    bad_events,
    fold_logged,
    produce_at,
    project,
    publish,
    publish_snapshots,
)
from tests.projector.sessions import START

H = timedelta(hours=1)
FAILED = TurnFailed(request_id="r", kind="error", message="no answer")
COMPACTED = CompactionApplied(strategy="summary", first_index=0, last_index=1, summary="before")
# Newest first, then by id: c2, c3 and c4 end at the same time.
ORDER = ["c6", "c5", "c2", "c3", "c4", "c1", "c0"]


def _events() -> list[ConversationEvent]:
    def at(conversation_id: str, when: timedelta, *bodies: EventBody) -> list[ConversationEvent]:
        return [new_event(conversation_id, b, occurred_at=START + when) for b in bodies]

    return [
        *at("c0", 0 * H, UserMessage(text="hello")),
        *at("c1", 1 * H, UserMessage(text="the zeppelin landed"), FAILED),
        *at("c2", 2 * H, UserMessage(text="tie a")),
        *at("c3", 2 * H, UserMessage(text="tie b"), COMPACTED),
        *at("c4", 2 * H, UserMessage(text="tie c")),
        *at("c5", 3 * H, GameEvent(kind="sky", text="Zeppelins over Harrogate"), FAILED),
        *at("c5", 3 * H, COMPACTED),
        *at("c6", 4 * H, UserMessage(text="latest")),
    ]


@pytest.fixture
def listed(projection: Settings) -> Settings:
    publish(projection, _events())
    bad_events(projection, [(b"c6", b"not avro"), (b"c2", b"not avro either")], "bad-magic")
    project(projection)  # reads the dead letters back
    return projection


def _ids(page: ConversationPage) -> list[str]:
    return [row.conversation_id for row in page.rows]


def _all_pages(conn: Connection, where: ConversationFilter, limit: int) -> list[list[str]]:
    pages, cursor = [], None
    while True:
        page = conversation_page(conn, where, limit=limit, cursor=cursor)
        pages.append(_ids(page))
        if page.next_cursor is None:
            return pages
        cursor = page.next_cursor


def test_each_filter_alone_and_together(listed: Settings) -> None:
    cases = [
        (ConversationFilter(), ORDER),
        (ConversationFilter(text="zeppelin"), ["c5", "c1"]),  # "Zeppelins" stems alike
        (ConversationFilter(text="  "), ORDER),  # a blank search box filters nothing
        (ConversationFilter(text='"tie b" or latest'), ["c6", "c3"]),
        (ConversationFilter(active_from=START + 2 * H), ["c6", "c5", "c2", "c3", "c4"]),
        (ConversationFilter(active_until=START + 2 * H), ["c1", "c0"]),
        (
            ConversationFilter(active_from=START + 1 * H, active_until=START + 3 * H),
            ["c2", "c3", "c4", "c1"],
        ),
        (ConversationFilter(has_failures=True), ["c5", "c1"]),
        (ConversationFilter(has_compactions=True), ["c5", "c3"]),
        (ConversationFilter(has_dead_letters=True), ["c6", "c2"]),
        (ConversationFilter(has_failures=True, has_compactions=True), ["c5"]),
        (ConversationFilter(text="zeppelin", active_until=START + 2 * H), ["c1"]),
        (ConversationFilter(text="nothing-like-it"), []),
    ]
    with connect(listed) as conn:
        for where, expected in cases:
            page = conversation_page(conn, where)
            assert (_ids(page), page.total, page.next_cursor) == (expected, len(expected), None), (
                where
            )


def test_summaries_carry_the_counters(listed: Settings) -> None:
    with connect(listed) as conn:
        rows = {r.conversation_id: r for r in conversation_page(conn).rows}
        listed_all = conversations(conn)
    counters = {c: (r.failed_turns, r.compactions, r.dead_letters) for c, r in rows.items()}
    assert counters == {
        "c0": (0, 0, 0),
        "c1": (1, 0, 0),
        "c2": (0, 0, 1),
        "c3": (0, 1, 0),
        "c4": (0, 0, 0),
        "c5": (1, 1, 0),
        "c6": (0, 0, 1),
    }
    assert (rows["c5"].event_count, rows["c5"].message_count) == (3, 1)
    assert rows["c5"].last_occurred_at == START + 3 * H
    assert list(rows.values()) == listed_all  # the older list reads the same rows


def test_pages_list_every_row_once_across_ties(listed: Settings) -> None:
    with connect(listed) as conn:
        assert _all_pages(conn, ConversationFilter(), 3) == [
            ["c6", "c5", "c2"],
            ["c3", "c4", "c1"],  # the tie at 2 h spans the page break
            ["c0"],
        ]
        assert _all_pages(conn, ConversationFilter(), 7) == [ORDER]
        assert _all_pages(conn, ConversationFilter(), 1) == [[c] for c in ORDER]
        assert _all_pages(conn, ConversationFilter(has_compactions=True), 1) == [["c5"], ["c3"]]
        second = conversation_page(conn, ConversationFilter(active_from=START + 2 * H), limit=2)
        assert second.total == 5
        after = conversation_page(
            conn, ConversationFilter(active_from=START + 2 * H), 2, second.next_cursor
        )
        assert (_ids(after), after.total) == (["c2", "c3"], 5)

        # Rows arriving at the top between two pages neither repeat nor skip a row.
        first = conversation_page(conn, limit=3)
    publish(listed, [new_event("c9", UserMessage(text="new"), occurred_at=START + 9 * H)])
    project(listed)
    with connect(listed) as conn:
        rest = conversation_page(conn, limit=10, cursor=first.next_cursor)
        assert _ids(rest) == ORDER[3:]
        assert rest.total == 8


def test_a_malformed_cursor_or_limit_is_the_callers_error(listed: Settings) -> None:
    def cursor_of(value: object) -> str:
        return base64.urlsafe_b64encode(json.dumps(value).encode()).decode()

    bad = [
        "not a cursor!",
        "",
        cursor_of(["2026-03-01T12:00:00+00:00"]),
        cursor_of(["2026-03-01T12:00:00", "c1"]),  # no time zone
        cursor_of(["yesterday", "c1"]),
        cursor_of([1, 2]),
        cursor_of({"at": 1}),
        base64.urlsafe_b64encode(b"\xff\xfe").decode(),
    ]
    with connect(listed) as conn:
        for cursor in bad:
            with pytest.raises(InputError, match="malformed page cursor"):
                conversation_page(conn, cursor=cursor)
        for limit in (0, -1, 1001):
            with pytest.raises(InputError, match="a page holds 1 to 1000"):
                conversation_page(conn, limit=limit)


def test_dead_letters_newest_first_by_conversation_and_in_pages(projection: Settings) -> None:
    t0 = 1_772_366_400_000
    never = 2_534_023_008_000_000  # a record time past any datetime: stored as no time
    headers = [("goaicore.dead-letter.reason", b"bad-magic")]
    sent = [(b"a", t0), (b"b", t0 + 1000), (b"a", t0 + 2000), (b"a", t0 + 2000), (b"b", -1)]
    sent += [(b"b", t0 + 3000), (b"a", never)]
    at: dict[bytes, tuple[int, int, int]] = {}  # value: (time or -1, partition, offset)
    for n, (key, ms) in enumerate(sent):
        [p] = produce_at(projection, "dead-letters", [(key, f"v{n}".encode())], ms, headers)
        at[f"v{n}".encode()] = (ms if ms != never else -1, p.partition, p.offset)
    project(projection)
    newest_first = sorted(at, key=lambda value: at[value], reverse=True)
    with connect(projection) as conn:
        everything = dead_letters(conn)
        assert [r.value for r in everything] == newest_first
        assert [r.dead_at is None for r in everything] == [False] * 5 + [True] * 2
        assert {r.reason for r in everything} == {"bad-magic"}

        of_a = dead_letters(conn, "a")
        assert [r.value for r in of_a] == [
            v for v in newest_first if v in (b"v0", b"v2", b"v3", b"v6")
        ]
        for limit in (1, 2, 3):
            paged: list[DeadLetterRow] = []
            before = None
            while True:
                page = dead_letters(conn, limit=limit, before=before)
                paged.extend(page)
                if len(page) < limit:
                    break
                before = page[-1].position
            assert paged == everything, limit
        assert dead_letters(conn, "a", limit=1, before=of_a[0].position) == [of_a[1]]
        assert dead_letters(conn, "a", before=of_a[-1].position) == []
        assert dead_letters(conn, "nobody") == []
        with pytest.raises(InputError, match="no dead letter at partition 0 offset 999"):
            dead_letters(conn, before=(0, 999))
        with pytest.raises(InputError, match="a page holds 1 to 1000"):
            dead_letters(conn, limit=0)


def test_metadata_is_listed_and_filters_the_list(projection: Settings) -> None:
    """Metadata set by events reaches the projection with the snapshot that folded it."""
    events = [
        new_event("m1", MetadataSet(title="The Harrogate Run", owner="ada", tags=("beta", "eu"))),
        new_event("m2", MetadataSet(title="Quiet night", owner="bob", tags=("eu",))),
        new_event("m3", MetadataSet(attributes={"region": "eu"})),
        new_event("m2", MetadataSet(tags=("eu", "vip"), attributes={"x\x00y": "nul\x00"})),
    ]
    publish_snapshots(projection, list(fold_logged(publish(projection, events)).values()))
    project(projection)
    cases = [
        (ConversationFilter(owner="ada"), ["m1"]),
        (ConversationFilter(tags=("eu",)), ["m1", "m2"]),
        (ConversationFilter(tags=("eu", "vip")), ["m2"]),
        (ConversationFilter(title="harrogate"), ["m1"]),
        (ConversationFilter(owner="bob", tags=("beta",)), []),
    ]
    with connect(projection) as conn:
        for where, expected in cases:
            assert sorted(r.conversation_id for r in conversations(conn, where=where)) == expected
        rows = {r.conversation_id: r for r in conversations(conn)}
        attributes = dict(
            conn.execute(
                "SELECT conversation_id, attributes FROM conversation_snapshots"
            ).fetchall()
        )
    assert (rows["m1"].title, rows["m1"].owner, rows["m1"].tags) == (
        "The Harrogate Run",
        "ada",
        ("beta", "eu"),
    )
    assert (rows["m3"].title, rows["m3"].tags) == (None, ())
    assert attributes["m3"] == {"region": "eu"}
    assert attributes["m2"] == {"x\ufffdy": "nul\ufffd"}  # PostgreSQL text holds no NUL
