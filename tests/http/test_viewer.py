"""The web viewer at `/`, in headless Chromium (Debian's `/usr/bin/chromium`, driven by
Playwright with `executable_path`; `make browser` installs it): it shows records appended
after it opened, and after the server restarts it resumes with no gap and no repeat."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from urllib.parse import urlencode

import httpx
import pytest
import pytest_asyncio
from playwright.async_api import Browser, Page, async_playwright

from tests.http.restart import RestartableServer, restartable_server
from tests.http.server import bearer, token
from tests.http.support import GUARD_SECONDS, append, create_stream

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                 "--no-first-run", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync"]
GUARD_MS = GUARD_SECONDS * 1000


@pytest.fixture
def own_server(pg_template: str, tmp_path: Path) -> RestartableServer:  # type: ignore[misc]
    with restartable_server(pg_template, tmp_path) as server:
        yield server


@pytest_asyncio.fixture
async def browser() -> AsyncIterator[Browser]:
    assert Path(CHROMIUM).exists(), "run `make browser` (installs Debian's chromium)"
    async with async_playwright() as playwright:
        launched = await playwright.chromium.launch(executable_path=CHROMIUM,
                                                    args=CHROMIUM_ARGS, headless=True)
        try:
            yield launched
        finally:
            await launched.close()


async def text(page: Page, element_id: str) -> str:
    return (await page.text_content(f"#{element_id}")) or ""


async def wait_for_count(page: Page, n: int) -> None:
    await page.wait_for_function(
        f"document.querySelectorAll('ol#records li[data-sequence]').length >= {n}",
        timeout=GUARD_MS)


async def test_the_viewer_follows_across_a_server_restart(own_server: RestartableServer,
                                                          browser: Browser,
                                                          run_id: str) -> None:
    secret = token()
    async with httpx.AsyncClient(base_url=own_server.api, headers=bearer(secret),
                                 timeout=30) as api:
        response = await asyncio.to_thread(httpx.get, own_server.url + "/")  # no token
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("text/html")
        await create_stream(api, run_id)
        await append(api, run_id, "s", ["before-1", "before-2"])

        # The page's CSP forbids eval; Playwright's wait_for_function needs it.
        page = await browser.new_page(bypass_csp=True)
        query = urlencode({"token": secret, "run": run_id, "stream": "s"})
        await page.goto(f"{own_server.url}/?{query}")
        await page.wait_for_function("document.getElementById('state').textContent"
                                     " === 'following'", timeout=GUARD_MS)
        await wait_for_count(page, 2)
        await append(api, run_id, "s", ["after-3", "after-4", "after-5"])
        await wait_for_count(page, 5)

        await asyncio.to_thread(own_server.restart)
        await append(api, run_id, "s", ["restarted-6", "restarted-7"])
        await wait_for_count(page, 7)
        await page.wait_for_function(
            "Number(document.getElementById('reconnects').textContent) >= 1", timeout=GUARD_MS)
        await append(api, run_id, "s", ["restarted-8"])
        await wait_for_count(page, 8)

        sequences = await page.eval_on_selector_all(
            "ol#records li[data-sequence]", "items => items.map(i => Number(i.dataset.sequence))")
        assert sequences == list(range(1, 9))
        assert await text(page, "gaps") == "0"
        assert await text(page, "count") == "8"
        assert await text(page, "last") == "8"
        assert int(await text(page, "reconnects")) >= 1
        assert "restarted-8" in (await text(page, "records"))
        streams = await page.eval_on_selector_all("#streams button",
                                                  "items => items.map(i => i.dataset.stream)")
        assert streams == ["s"]
        await page.screenshot(path=str(Path(own_server.server.log).parent / "viewer.png"))
