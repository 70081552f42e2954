"""End-to-end browser tests: the machine's Chromium, driven by Playwright.

No browser is ever downloaded (never run ``playwright install``): the tests drive
Debian's chromium (``apt-get install chromium``) through the driver that the
playwright wheel bundles. The Chromium is the first of:

- ``GOAICORE_CHROMIUM``: a path to a Chromium executable;
- ``/usr/bin/chromium``;
- ``chromium`` on the PATH.

Debian's ``/usr/bin/chromium`` is a shell launcher that adds flags of its own from
/etc/chromium.d; where its real binary ``/usr/lib/chromium/chromium`` is there, that
binary is launched instead, so that a test's Chromium runs with exactly the flags below.

Without a Chromium the browser tests are skipped, with the reason naming what to
install; with ``GOAICORE_REQUIRE_BROWSER=1`` (CI) they fail instead, so that a run
without a browser never counts as a pass.

Fixtures (tests/console/conftest.py imports them):

- ``chromium``: one headless Chromium for the session, with a fresh empty profile
  (Playwright's own temporary user data dir, removed when it closes);
- ``browser_page``: a new browser context and page per test, closed after it.

``screenshot(page, name)`` saves a PNG under test-artifacts/screenshots/ at the repo
root; ``serve_app(app)`` serves an aiohttp application on 127.0.0.1 in a thread of
its own, for the page to load.

Browser tests are plain sync tests (``def test_...``), never ``async def``: the sync
API refuses to run inside a running event loop. And while it is started, Playwright
marks its event loop as the thread's running loop: the fixtures mark it only for the
duration of a browser test, so the async tests that pytest-asyncio runs between
browser tests see no running loop and start theirs as usual.
"""

from __future__ import annotations

import asyncio
import inspect
import os
import re
import shutil
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import NoReturn

import pytest
from aiohttp import web
from playwright.sync_api import Browser, Page, sync_playwright

REPO_ROOT = Path(__file__).resolve().parents[1]
SCREENSHOTS = REPO_ROOT / "test-artifacts" / "screenshots"

CHROMIUM_ENV = "GOAICORE_CHROMIUM"
REQUIRE_ENV = "GOAICORE_REQUIRE_BROWSER"
DEBIAN_LAUNCHER = Path("/usr/bin/chromium")
DEBIAN_BINARY = Path("/usr/lib/chromium/chromium")

CHROMIUM_ARGS = (
    "--no-sandbox",  # the tests may run as root, where Chromium's sandbox refuses to start
    "--disable-gpu",  # no GPU here: software rendering, without GPU probing
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",  # a small /dev/shm (containers) would crash renderers
    # Only the loopback resolves: a page under test never reaches out to the network.
    "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE localhost, EXCLUDE 127.0.0.1",
)

# A test's browser actions fail within seconds, not Playwright's default 30 s.
ACTION_TIMEOUT_MS = 10_000


def find_chromium() -> tuple[str | None, str]:
    """The Chromium executable to launch, else None and why none was found."""
    wanted = os.environ.get(CHROMIUM_ENV, "").strip()
    if wanted:
        if os.access(wanted, os.X_OK) and Path(wanted).is_file():
            return wanted, ""
        return None, f"{CHROMIUM_ENV}={wanted} is not an executable file"
    found = str(DEBIAN_LAUNCHER) if os.access(DEBIAN_LAUNCHER, os.X_OK) else None
    found = found or shutil.which("chromium")
    if found is None:
        return None, "no Chromium: install Debian's (apt-get install chromium) or set " + (
            f"{CHROMIUM_ENV} to a Chromium executable"
        )
    if Path(found).resolve() == DEBIAN_LAUNCHER and os.access(DEBIAN_BINARY, os.X_OK):
        return str(DEBIAN_BINARY), ""
    return found, ""


def _unavailable(reason: str) -> NoReturn:
    if os.environ.get(REQUIRE_ENV) == "1":
        pytest.fail(f"{REQUIRE_ENV}=1 but {reason}", pytrace=False)
    pytest.skip(reason)


@dataclass(frozen=True)
class Chromium:
    """The session's browser, and the event loop of Playwright's sync API."""

    browser: Browser
    executable: str
    loop: asyncio.AbstractEventLoop


@pytest.fixture(scope="session")
def chromium() -> Iterator[Chromium]:
    executable, reason = find_chromium()
    if executable is None:
        _unavailable(reason)
    with sync_playwright() as playwright:
        try:
            browser = playwright.chromium.launch(
                executable_path=executable, headless=True, args=list(CHROMIUM_ARGS)
            )
        except Exception as err:
            _unavailable(f"{executable} did not start: {str(err)[:400]}")
        loop = asyncio.get_running_loop()  # Playwright's, marked running after each call
        asyncio.events._set_running_loop(None)
        try:
            yield Chromium(browser, executable, loop)
        finally:
            asyncio.events._set_running_loop(loop)
            browser.close()


@pytest.fixture
def browser_page(request: pytest.FixtureRequest, chromium: Chromium) -> Iterator[Page]:
    """A page in a fresh browser context of its own (no cookies, no storage)."""
    if inspect.iscoroutinefunction(request.function):
        pytest.fail("browser tests are plain sync tests: `def test_...`, not `async def`")
    asyncio.events._set_running_loop(chromium.loop)
    try:
        context = chromium.browser.new_context(viewport={"width": 1280, "height": 800})
        context.set_default_timeout(ACTION_TIMEOUT_MS)
        try:
            yield context.new_page()
        finally:
            context.close()
    finally:
        asyncio.events._set_running_loop(None)


def screenshot(page: Page, name: str) -> Path:
    """Save the whole page as test-artifacts/screenshots/NAME.png; the file's path."""
    stem = re.sub(r"[^A-Za-z0-9_.-]+", "-", name).strip("-.") or "page"
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    path = SCREENSHOTS / f"{stem.removesuffix('.png')}.png"
    page.screenshot(path=path, full_page=True)
    return path


@contextmanager
def serve_app(app: web.Application, timeout: float = 10.0) -> Iterator[str]:
    """Serve ``app`` on 127.0.0.1 (a free port) from a thread; yields its base URL.

    The thread has an event loop of its own, so the sync test and the browser can
    talk to the server while it runs.
    """
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, name="serve-app", daemon=True)
    thread.start()
    runner = web.AppRunner(app, access_log=None)

    async def start() -> int:
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        port: int = runner.addresses[0][1]
        return port

    try:
        try:
            port = asyncio.run_coroutine_threadsafe(start(), loop).result(timeout)
            yield f"http://127.0.0.1:{port}"
        finally:
            asyncio.run_coroutine_threadsafe(runner.cleanup(), loop).result(timeout)
    finally:
        loop.call_soon_threadsafe(loop.stop)
        thread.join(timeout)
        loop.close()
