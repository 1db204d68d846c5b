"""The console lists every stream of a run, across the listing's pages (ADR 0025)."""

from __future__ import annotations

from pathlib import Path

import httpx
from playwright.async_api import Browser

from tests.http.console_support import GUARD_MS, browser, console_page, screenshot, sign_in
from tests.http.server import RunnelServer, bearer, token
from tests.http.support import create_stream

__all__ = ["browser"]

STREAMS = 105
"""More than one page of the listing (100 by default)."""


async def test_the_viewer_lists_a_run_of_more_than_one_page(server: RunnelServer,
                                                            browser: Browser,
                                                            run_id: str,
                                                            tmp_path: Path) -> None:
    secret = token()
    async with httpx.AsyncClient(base_url=server.api, headers=bearer(secret),
                                 timeout=30) as api:
        names = [f"s{n:03d}" for n in range(STREAMS)]
        for name in names:
            await create_stream(api, run_id, name)
        first = (await api.get(f"/runs/{run_id}/streams")).json()
        assert len(first["streams"]) == 100 and first["next_cursor"] == "s099"
    page = await console_page(browser)
    await sign_in(page, server.url, secret)
    await page.fill("#run", run_id)
    await page.click("#list")
    await page.wait_for_function(
        f"document.querySelectorAll('#streams button').length >= {STREAMS}", timeout=GUARD_MS)
    listed = await page.eval_on_selector_all("#streams button",
                                             "items => items.map(i => i.dataset.stream)")
    assert listed == names
    await screenshot(page, tmp_path, "many-streams", secret=secret)
