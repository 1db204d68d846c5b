"""Driving the console (ADR 0046) in headless Chromium: Debian's `/usr/bin/chromium`
through Playwright's `executable_path` (`make browser` installs it; never `playwright
install`). Signing in goes through the form, as a person does: the token is typed into the
page, never put into a URL. Every test writes its screenshot under its tmp dir; the
overview test also writes `docs/console.png` when `RUNNEL_CONSOLE_SCREENSHOT=1`."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest_asyncio
from playwright.async_api import Browser, Page, async_playwright

from tests.http.support import GUARD_SECONDS

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                 "--no-first-run", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync"]
GUARD_MS = GUARD_SECONDS * 1000
CANONICAL = Path(__file__).parents[2] / "docs" / "console.png"
VIEWPORT: Any = {"width": 1440, "height": 1000}


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


async def console_page(browser: Browser) -> Page:
    """A page of its own context (its own sessionStorage). The console's policy forbids
    eval, which Playwright's `wait_for_function` needs: tests that need it bypass the
    policy (the policy itself is tested on a page that keeps it)."""
    context = await browser.new_context(bypass_csp=True, viewport=VIEWPORT)
    return await context.new_page()


async def sign_in(page: Page, url: str, secret: str, *, query: str = "",
                  remember: bool = False) -> None:
    await page.goto(f"{url}/{query}")
    await page.fill("#token", secret)
    if remember:
        await page.check("#remember")
    await page.click("#sign-in")
    await page.wait_for_selector("#console:not([hidden])", timeout=GUARD_MS)


async def open_run(page: Page, run: str) -> None:
    """By the run box, which works for a run past the first page of the runs list."""
    await page.fill("#run", run)
    await page.click("#list")
    await page.wait_for_function(
        "run => document.getElementById('run-name').textContent === run"
        " && document.querySelectorAll('#streams button').length > 0",
        arg=run, timeout=GUARD_MS)


async def open_stream(page: Page, run: str, stream: str) -> None:
    await open_run(page, run)
    await page.click(f'#streams button[data-stream="{stream}"]')
    await page.wait_for_function(
        "stream => document.getElementById('current').textContent === stream"
        " && document.getElementById('state').textContent === 'following'",
        arg=stream, timeout=GUARD_MS)


async def screenshot(page: Page, directory: Path, name: str, *, secret: str,
                     canonical: bool = False) -> Path:
    """The page as a picture, once no token shows anywhere on it (text or field)."""
    shown = await page.evaluate(
        "() => document.body.innerText + [...document.querySelectorAll('input')]"
        ".map((i) => i.value).join(' ')")
    assert secret not in shown and secret.split(".")[-1] not in shown
    path = directory / f"{name}.png"
    await page.screenshot(path=str(path), full_page=True)
    if canonical and os.environ.get("RUNNEL_CONSOLE_SCREENSHOT") == "1":
        await page.screenshot(path=str(CANONICAL), full_page=False)
    return path


async def wait_until(page: Page, condition: str, arg: object = None) -> None:
    await page.wait_for_function(condition, arg=arg, timeout=GUARD_MS)
