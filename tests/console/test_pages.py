"""The console's pages over a real projection (Apache Kafka, PostgreSQL), through HTTP."""

from __future__ import annotations

import asyncio
import re
from collections.abc import AsyncIterator
from urllib.parse import quote

import pytest
from aiohttp.test_utils import TestClient, TestServer
from yarl import URL

from goaicore.http_auth import BearerTokens
from goaicore_console.app import create_console
from goaicore_console.auth import COOKIE, accepts_cookie, session_cookie
from tests.console.conftest import TOKEN
from tests.console.data import (
    ANSWER,
    BULK,
    ERASED,
    FORK,
    GAME_TEXT,
    OPS,
    OPS_TITLE,
    QUEST,
    SCRIPT,
    SUMMARY,
    TAMPERED,
    TOOL_ARGUMENTS,
    Audited,
)
from tests.raw_http import raw_request

HTML = {"Accept": "text/html"}
BEARER = {"Authorization": f"Bearer {TOKEN}"}


@pytest.fixture
async def client(audited: Audited) -> AsyncIterator[TestClient]:  # type: ignore[type-arg]
    async with TestClient(TestServer(create_console(audited.settings))) as client:
        yield client


async def page(client: TestClient, path: str, status: int = 200) -> str:  # type: ignore[type-arg]
    response = await client.get(path, headers=BEARER)
    text = await response.text()
    assert response.status == status, text
    assert "script-src" not in response.headers["Content-Security-Policy"]
    assert "default-src 'none'" in response.headers["Content-Security-Policy"]
    return text


def _path(conversation_id: str) -> str:
    return f"/conversations/{quote(conversation_id, safe='')}"


async def test_a_browser_without_a_session_is_sent_to_sign_in_and_a_script_gets_401(
    client: TestClient,  # type: ignore[type-arg]
) -> None:
    redirected = await client.get("/conversations?q=x", headers=HTML, allow_redirects=False)
    assert redirected.status == 303
    location = URL(redirected.headers["Location"])
    assert (location.path, location.query["next"]) == ("/login", "/conversations?q=x")
    refused = await client.get("/conversations")
    assert refused.status == 401
    assert "Bearer" in refused.headers["WWW-Authenticate"]
    assert (await client.get("/health")).status == 200
    assert (await client.get("/login")).status == 200


async def test_signing_in_with_a_token_sets_a_cookie_that_proves_it_without_holding_it(
    client: TestClient,  # type: ignore[type-arg]
) -> None:
    wrong = await client.post("/login", data={"token": "not-the-token-at-all", "next": "/"})
    assert wrong.status == 401
    assert "not accepted" in await wrong.text()
    signed = await client.post(
        "/login", data={"token": TOKEN, "next": "/usage"}, allow_redirects=False
    )
    assert signed.status == 303
    assert signed.headers["Location"] == "/usage"
    cookie = signed.cookies[COOKIE]
    assert TOKEN not in cookie.value
    assert cookie["httponly"]
    assert cookie["samesite"] == "Strict"
    listed = await client.get("/conversations", headers=HTML)
    assert listed.status == 200  # the client keeps the cookie
    await client.post("/logout", allow_redirects=False)
    assert (await client.get("/conversations")).status == 401
    # Elsewhere than this console: never followed after signing in.
    away = await client.post(
        "/login", data={"token": TOKEN, "next": "//evil.example/"}, allow_redirects=False
    )
    assert away.headers["Location"] == "/"


def test_a_session_cookie_lapses_and_dies_with_its_token() -> None:
    tokens = BearerTokens([TOKEN])
    value = session_cookie(tokens, TOKEN, now=1000.0)
    assert value is not None
    assert accepts_cookie(tokens, value, now=1001.0)
    assert not accepts_cookie(tokens, value, now=1000.0 + 13 * 3600)
    assert not accepts_cookie(BearerTokens(["another-token-0123456789"]), value, now=1001.0)
    expires, _, tag = value.partition(".")
    assert not accepts_cookie(tokens, f"{int(expires) + 3600}.{tag}", now=1001.0)
    assert session_cookie(tokens, "a guess", now=1000.0) is None


async def test_the_list_pages_through_every_conversation_once(
    client: TestClient,  # type: ignore[type-arg]
    audited: Audited,
) -> None:
    first = await page(client, "/conversations")
    assert f"{audited.conversations:,} conversations" in first
    seen = re.findall(r'<a href="/conversations/([^"]+)">', first)
    assert len(seen) == 50
    cursor = re.search(r'href="([^"]*cursor=[^"]*)" data-testid="next-page"', first)
    assert cursor is not None
    second = await page(client, cursor.group(1).replace("&amp;", "&"))
    seen += re.findall(r'<a href="/conversations/([^"]+)">', second)
    assert 'data-testid="next-page"' not in second
    listed = [*BULK, QUEST, TAMPERED, OPS, FORK, ERASED]
    assert sorted(seen) == sorted(quote(c, safe="") for c in listed)


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("q=tavern", {QUEST}),
        ("failures=1", {QUEST}),
        ("compactions=1", {QUEST}),
        ("dead_letters=1", {QUEST}),
        ("q=tampered", {TAMPERED}),
        ("q=nothing-says-this", set()),
    ],
)
async def test_search_and_filters(
    client: TestClient,  # type: ignore[type-arg]
    query: str,
    expected: set[str],
) -> None:
    text = await page(client, f"/conversations?{query}")
    found = set(re.findall(r'<a href="/conversations/([^"]+)">', text))
    assert found == {quote(c, safe="") for c in expected}


async def test_a_bad_parameter_is_a_400_page_that_names_it(
    client: TestClient,  # type: ignore[type-arg]
) -> None:
    assert "from:" in await page(client, "/conversations?from=yesterday", status=400)
    assert "cursor" in await page(client, "/conversations?cursor=garbage", status=400)
    assert "offset" in await page(client, f"{_path(QUEST)}/as-of?offset=-3", status=400)
    assert "period" in await page(client, "/usage?period=fortnight", status=400)
    assert "no conversation" in await page(client, _path("nobody"), status=404)
    assert "no conversation" in await page(client, _path("line\nbreak ☃"), status=404)
    assert "no conversation" in await page(client, f"{_path('a/b')}/as-of", status=404)
    assert "Not Found" in await page(client, "/no/such/page", status=404)


async def test_the_timeline_shows_every_record_in_log_order_escaped(
    client: TestClient,  # type: ignore[type-arg]
    audited: Audited,
) -> None:
    text = await page(client, _path(QUEST))
    types = re.findall(r'data-testid="entry" data-type="([^"]+)"', text)
    assert types == [
        "UserMessage",
        "AssistantTurn",
        "ToolResult",
        "AssistantTurn",
        "ok",  # r1's reply, right after r1's last event
        "GameEvent",
        "UserMessage",
        "CompactionApplied",
        "AssistantTurn",
        "TurnFailed",
        "timeout",
    ]
    # Text from the conversation is text, never markup.
    assert "<script>" not in text
    assert "<b>tavern</b>" not in text
    assert "<i>north</i>" not in text
    escaped = (SCRIPT, ANSWER, GAME_TEXT, SUMMARY, "<main hall>")
    for original in escaped:
        assert _escaped(original) in text, original
    assert "find_place" in text
    assert _escaped('"place": "<tavern>"') in text
    assert TOOL_ARGUMENTS not in text
    assert "The 4 replaced messages" in text  # read off the snapshot before the compaction
    assert "unpriced-model" in text  # named among the turns without a price
    assert "$0.004000" in text  # 1.5 + 2.5 million nano-dollars
    for offset in audited.quest_offsets:
        assert f":{offset}</span>" in text


def _escaped(text: str) -> str:
    return (
        text.replace("&", "&amp;")
        .replace("<", "&lt;")
        .replace(">", "&gt;")
        .replace('"', "&#34;")
        .replace("'", "&#39;")
    )


async def test_as_of_any_point_and_what_the_model_was_sent(
    client: TestClient,  # type: ignore[type-arg]
    audited: Audited,
) -> None:
    offsets = audited.quest_offsets
    latest = await page(client, f"{_path(QUEST)}/as-of")
    assert "9 of 9 events applied" in latest
    third = await page(client, f"{_path(QUEST)}/as-of?offset={offsets[2]}")
    assert "3 of 9 events applied" in third
    assert third.count('data-testid="message"') == 3
    assert _escaped(SCRIPT) in third
    assert "find_place" in third
    # The second model call of r1 was sent the user message, its tool call and the result.
    sent = await page(client, f"{_path(QUEST)}/as-of?before={offsets[3]}")
    assert "What the model was sent for the call at" in sent
    assert sent.count('data-testid="message"') == 3
    # After the compaction, its summary stands for the four messages it replaced.
    compacted = await page(client, f"{_path(QUEST)}/as-of?offset={offsets[6]}")
    assert _escaped(SUMMARY) in compacted
    assert _escaped(SCRIPT) not in compacted
    before_all = await page(client, f"{_path(QUEST)}/as-of?time=2000-01-01T00:00")
    assert "0 of 9 events applied" in before_all


async def test_verify_one_conversation_and_all_with_differences_side_by_side(
    client: TestClient,  # type: ignore[type-arg]
    audited: Audited,
) -> None:
    equal = await page(client, f"/verify?conversation={quote(QUEST)}")
    assert "the snapshot equals the fold of its events" in equal
    different = await page(client, f"/verify?conversation={TAMPERED}")
    assert "1 difference" in different
    row = re.search(r"<td>event_count</td><td><pre>(\d+)</pre></td><td><pre>(\d+)</pre>", different)
    assert row is not None
    assert row.groups() == ("99", "3")
    started = await client.post("/verify/all", headers=BEARER, allow_redirects=False)
    assert started.status == 303
    for _ in range(200):
        text = await page(client, "/verify")
        if "finished" in text:
            break
        await asyncio.sleep(0.1)
    expected = f"{audited.conversations - 1:,} equal, 1 different, 0 pending"
    assert expected in text


async def test_dead_letters_and_usage(client: TestClient) -> None:  # type: ignore[type-arg]
    letters = await page(client, "/dead-letters")
    assert "bad-magic" in letters or "undecodable" in letters
    assert re.search(r"\.events\[\d\]@\d+", letters)
    assert _escaped(QUEST) in letters
    none = await page(client, f"/dead-letters?conversation={TAMPERED}")
    assert "No dead letters." in none
    usage = await page(client, "/usage")
    assert "Tokens per day" in usage
    assert "<svg" in usage
    assert "$0.004000" in usage


async def test_without_tokens_every_page_is_open_and_says_so(audited: Audited) -> None:
    settings = audited.settings.with_overrides(http_tokens=())
    async with TestClient(TestServer(create_console(settings))) as open_client:
        listed = await open_client.get("/conversations")
        assert listed.status == 200
        text = await listed.text()
        assert "unauthenticated · 127.0.0.1 only" in text
        assert "Sign out" not in text
        login = await open_client.get("/login?next=/usage", allow_redirects=False)
        assert login.status == 303, await login.text()
        assert login.headers["Location"] == "/usage"


async def test_sign_in_never_leads_to_another_site(
    client: TestClient,  # type: ignore[type-arg]
) -> None:
    for target in ("/\t/evil.example", "/\n/evil.example", "http://evil.example/", "/\\evil"):
        signed = await client.post(
            "/login", data={"token": TOKEN, "next": target}, allow_redirects=False
        )
        assert signed.headers["Location"] == "/", target


async def test_requests_another_site_can_make_are_refused(
    client: TestClient,  # type: ignore[type-arg]
    audited: Audited,
) -> None:
    forged = await client.post(
        "/verify/all", headers={**BEARER, "Origin": "http://evil.example"}, allow_redirects=False
    )
    assert forged.status == 403
    settings = audited.settings.with_overrides(http_tokens=())
    async with TestClient(TestServer(create_console(settings))) as open_client:
        rebound = await open_client.get("/conversations", headers={"Host": "evil.example"})
        assert rebound.status == 421
        listed = await open_client.get("/conversations", headers={"Host": "localhost:8470"})
        assert listed.status == 200


async def test_odd_input_is_a_4xx_never_a_500(
    client: TestClient,  # type: ignore[type-arg]
) -> None:
    assert "before" in await page(client, "/dead-letters?before=%C2%B2:1", status=400)
    assert "until" in await page(client, "/usage?until=0001-01-01", status=400)
    assert "offset" in await page(client, f"{_path(QUEST)}/as-of?offset={10**30}", status=400)
    assert "NUL" in await page(client, "/verify?conversation=%00", status=400)
    assert "NUL" in await page(client, "/conversations/%00", status=404)
    cookie = await client.get("/conversations", headers={"Cookie": f"{COOKIE}=\u00b2.x"})
    assert cookie.status == 401
    huge = await client.get("/conversations", headers={"Cookie": f"{COOKIE}={'9' * 5000}.x"})
    assert huge.status == 401
    body = await client.post(
        "/login",
        data=b"token=\xff",
        headers={"Content-Type": "application/x-www-form-urlencoded; charset=bogus"},
    )
    assert body.status == 400
    wrong_method = await client.post("/conversations", headers=BEARER)
    assert wrong_method.status == 405
    assert "GET" in wrong_method.headers["Allow"]


@pytest.mark.parametrize(
    "header",
    [
        b"Authorization: Bearer \xff\xfe-not-utf8",
        b"Authorization: Bearer " + TOKEN.encode() + b"\x80",
        b"Cookie: " + COOKIE.encode() + b"=99999999999.\xff\xfe",
    ],
)
async def test_a_header_or_cookie_that_is_not_utf8_is_a_401_not_a_crash(
    client: TestClient,  # type: ignore[type-arg]
    caplog: pytest.LogCaptureFixture,
    header: bytes,
) -> None:
    port = client.server.port
    assert port is not None
    status, body = await asyncio.to_thread(raw_request, port, "GET", "/conversations", [header])
    assert status == 401, body
    assert b"sign in at /login" in body
    assert "Traceback" not in caplog.text
    assert not [r for r in caplog.records if r.exc_info]


def test_ids_are_quoted_as_one_segment() -> None:
    from goaicore_console.rendering import url_segment

    assert url_segment("a/b?c&d #e") == "a%2Fb%3Fc%26d%20%23e"


async def test_verify_all_asked_at_once_runs_one_job(audited: Audited) -> None:
    from goaicore_console.keys import JOBS_KEY

    app = create_console(audited.settings)
    async with TestClient(TestServer(app)):
        jobs = app[JOBS_KEY]
        started = await asyncio.gather(*(jobs.start_all() for _ in range(5)))
        assert all(job is started[0] for job in started)
        for _ in range(300):
            if not started[0].running:
                break
            await asyncio.sleep(0.1)
        assert started[0].report is not None
        assert started[0].checked == started[0].total == audited.conversations


async def test_history_operations_are_on_the_timeline_and_metadata_on_the_pages(
    client: TestClient,  # type: ignore[type-arg]
) -> None:
    text = await page(client, _path(OPS))
    types = re.findall(r'data-testid="entry" data-type="([^"]+)"', text)
    assert types == ["UserMessage", "UserMessage", "MetadataSet", "ConversationRewound"]
    assert "<b>undo</b>: the history went back to offset 0, 1 message kept" in text
    assert _escaped("keep <this>") in text  # the history it went back to
    assert f"<b>{_escaped(OPS_TITLE)}</b>" in text  # the labels under the title
    assert '<span class="tag">&lt;x&gt;</span>' in text
    assert "<ops>" not in text
    forked = await page(client, _path(FORK))
    link = f'<a href="/conversations/{quote(OPS, safe="")}">{_escaped(OPS)}</a>'
    assert f"Forked from {link}: its events up to 0:0, 1 message." in forked
    assert f"forked from {link} at" in forked
    erased = await page(client, _path(ERASED))
    types = re.findall(r'data-testid="entry" data-type="([^"]+)"', erased)
    assert types == ["UserMessage", "ConversationErased"]
    assert "<b>erased</b> (the player asked): the content of the events above" in erased
    assert "[erased]" in erased
    assert "Mill Lane" not in erased
    listed = await page(client, "/conversations?q=regret")
    assert f'<span class="muted">{_escaped(OPS_TITLE)}</span>' in listed
