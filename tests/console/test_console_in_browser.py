"""The console end to end: ``goaicore console`` as its own process over a real projection
(Apache Kafka, PostgreSQL), used in headless Chromium as an auditor would.

Screenshots of each page are kept under test-artifacts/screenshots/.
"""

from __future__ import annotations

import re
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Dialog, Page, expect

from goaicore.devstack.console_process import ConsoleProcess
from goaicore.net import free_loopback_port
from tests.browser import screenshot
from tests.console.conftest import TOKEN
from tests.console.data import QUEST, SCRIPT, TAMPERED, Audited
from tests.kafka.helpers import wait_until


@pytest.fixture(scope="module")
def console_url(audited: Audited, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    log = tmp_path_factory.mktemp("console-process") / "console.log"
    port = free_loopback_port()
    process = ConsoleProcess(audited.settings, log, web_port=port).start()
    url = f"http://127.0.0.1:{port}"
    try:
        wait_until(lambda: _answers(f"{url}/health"), 60, what=f"the console at {url}")
        yield url
    finally:
        process.stop()
    assert TOKEN not in Path(log).read_text()


def _answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            return bool(response.status == 200)
    except OSError:
        return False


def _no_dialogs(page: Page) -> list[str]:
    """Messages of any dialog a page opens: a script that ran would show one."""
    opened: list[str] = []

    def record(dialog: Dialog) -> None:
        opened.append(dialog.message)
        dialog.dismiss()

    page.on("dialog", record)
    return opened


def _sign_in(page: Page, url: str) -> None:
    page.goto(f"{url}/conversations")
    expect(page).to_have_url(re.compile(r"/login\?next="))
    page.fill("input[name=token]", "a wrong token, surely")
    page.click("button[type=submit]")
    expect(page.get_by_test_id("login-failed")).to_be_visible()
    page.fill("input[name=token]", TOKEN)
    page.click("button[type=submit]")
    expect(page).to_have_url(re.compile(r"/conversations$"))


def test_an_auditor_lists_opens_replays_and_verifies(
    browser_page: Page, console_url: str, audited: Audited
) -> None:
    page = browser_page
    dialogs = _no_dialogs(page)
    _sign_in(page, console_url)
    rows = page.get_by_test_id("conversations").locator("tbody tr")
    expect(rows).to_have_count(50)
    expect(page.get_by_test_id("total")).to_have_text(f"{audited.conversations} conversations")
    screenshot(page, "console-conversations")

    page.fill("input[name=q]", "tavern")
    page.click("text=Filter")
    expect(rows).to_have_count(1)
    page.click(f"text={QUEST}")
    expect(page.get_by_test_id("conversation-id")).to_have_text(QUEST)
    entries = page.get_by_test_id("entry")
    expect(entries).to_have_count(11)
    # The player's text, <script> and all, is on the page as text.
    expect(entries.first.locator("pre.text")).to_have_text(SCRIPT)
    expect(page.locator("main script")).to_have_count(0)
    screenshot(page, "console-timeline")

    page.get_by_test_id("as-of-link").click()
    expect(page.get_by_test_id("as-of-progress")).to_have_text("9 of 9 events applied.")
    page.get_by_test_id("as-of-select").select_option(str(audited.quest_offsets[2]))
    page.get_by_test_id("as-of-go").click()
    expect(page.get_by_test_id("as-of-progress")).to_have_text("3 of 9 events applied.")
    expect(page.get_by_test_id("history").get_by_test_id("message")).to_have_count(3)
    page.get_by_test_id("as-of-previous").click()
    expect(page.get_by_test_id("as-of-progress")).to_have_text("2 of 9 events applied.")
    page.get_by_test_id("as-of-next").click()
    page.get_by_test_id("as-of-next").click()
    expect(page.get_by_test_id("as-of-progress")).to_have_text("4 of 9 events applied.")
    screenshot(page, "console-as-of")

    page.locator("h1 a").click()  # back to the conversation
    page.get_by_test_id("verify-link").click()
    expect(page.get_by_test_id("verify-outcome")).to_contain_text("equals the fold")
    page.get_by_test_id("verify-conversation").fill(TAMPERED)
    page.get_by_test_id("verify-one").click()
    expect(page.get_by_test_id("verify-outcome")).to_contain_text("1 difference")
    expect(page.get_by_test_id("differences").locator("tbody tr")).to_have_count(1)
    expect(page.get_by_test_id("differences")).to_contain_text("event_count")
    page.get_by_test_id("verify-all").click()
    outcome = page.get_by_test_id("verify-all-outcome")  # the page refreshes while it runs
    expect(outcome).to_have_text(
        f"{audited.conversations - 1} equal, 1 different, 0 pending.", timeout=60_000
    )
    screenshot(page, "console-verify")

    page.click("text=Dead letters")
    expect(page.get_by_test_id("dead-letters")).to_contain_text("bad-magic")
    screenshot(page, "console-dead-letters")
    page.click("text=Tokens & cost")
    expect(page.get_by_test_id("usage-charts").locator("svg")).to_have_count(2)
    screenshot(page, "console-usage")
    assert dialogs == []
