"""The browser harness itself: a served page, clicked and typed into in headless Chromium."""

from __future__ import annotations

import asyncio
import html

from aiohttp import web
from playwright.sync_api import Page

from tests.browser import screenshot, serve_app

PAGE = """<!doctype html>
<html><head><meta charset="utf-8"><title>harness</title></head><body>
<p id="status">waiting</p>
<button id="go" type="button">Go</button>
<form method="post" action="/echo">
  <label>Name <input name="name" id="name"></label>
  <button type="submit">Send</button>
</form>
<script>
document.getElementById("go").addEventListener("click", () => {
  document.getElementById("status").textContent = "clicked";
});
</script>
</body></html>
"""


async def index(request: web.Request) -> web.Response:
    return web.Response(text=PAGE, content_type="text/html")


async def echo(request: web.Request) -> web.Response:
    name = (await request.post()).get("name", "")
    body = f'<!doctype html><p id="echo">hello {html.escape(str(name))}</p>'
    return web.Response(text=body, content_type="text/html")


def test_click_type_submit_and_screenshot(browser_page: Page) -> None:
    app = web.Application()
    app.add_routes([web.get("/", index), web.post("/echo", echo)])
    with serve_app(app) as base_url:
        page = browser_page
        page.goto(base_url + "/")
        page.click("#go")
        assert page.inner_text("#status") == "clicked"
        page.fill("#name", "Ada <3")
        assert page.input_value("#name") == "Ada <3"
        shot = screenshot(page, "harness-form")
        page.click("button[type=submit]")
        assert page.inner_text("#echo") == "hello Ada <3"
    assert shot.is_file()
    assert shot.read_bytes().startswith(b"\x89PNG\r\n\x1a\n")


async def test_asyncio_still_runs_after_a_browser_test() -> None:
    """The session's Playwright leaves no running event loop behind between tests."""
    await asyncio.sleep(0)
