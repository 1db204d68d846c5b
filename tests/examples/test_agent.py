"""The agent example end to end in Chromium: a prompt goes in through the page,
the DBOS workflow answers token by token, Runnel is killed with -9 mid-answer and started
again, and the page ends with the full answer, once; a reload shows it once again."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import httpx
import pytest
import pytest_asyncio
from playwright.async_api import Browser, async_playwright

from examples.agent.model import answer_text
from tests.http.restart import RestartableServer
from tests.http.server import SECRET
from tests.pg import create_database, drop_database, pg_dsn, pg_template  # noqa: F401

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = "/usr/bin/chromium"
GUARD_MS = 60_000
PROMPT = "how do streams resume after a crash"


@pytest_asyncio.fixture
async def dbos_database() -> AsyncIterator[str]:
    dsn = await create_database(prefix="runnel_agent_dbos")
    try:
        yield dsn
    finally:
        await drop_database(dsn)


@pytest_asyncio.fixture
async def browser() -> AsyncIterator[Browser]:
    assert Path(CHROMIUM).exists(), "run `make browser` (installs Debian's chromium)"
    async with async_playwright() as playwright:
        launched = await playwright.chromium.launch(executable_path=CHROMIUM, headless=True,
                                                    args=["--no-sandbox"])
        try:
            yield launched
        finally:
            await launched.close()


def free_port() -> int:
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.fixture
def example(pg_dsn: str, dbos_database: str, tmp_path: Path  # noqa: F811
            ) -> Iterator[tuple[RestartableServer, str]]:
    runnel = RestartableServer(pg_dsn, tmp_path / "runnel", {
        "RUNNEL_WAIT_SERVICE": "dbos", "RUNNEL_DBOS_DATABASE_URL": dbos_database,
        "RUNNEL_SWEEP_SECONDS": "0.05"}, workers=True)
    port = free_port()
    with (tmp_path / "app.log").open("w") as log:
        app = subprocess.Popen([sys.executable, "-m", "examples.agent.app", "--runnel-url",
                                runnel.url, "--secret", SECRET, "--dbos-url", dbos_database,
                                "--port", str(port)], cwd=ROOT, stdout=subprocess.DEVNULL,
                               stderr=log)
    page_url = f"http://127.0.0.1:{port}/"
    try:
        deadline = time.monotonic() + GUARD_MS / 1000
        while True:
            assert app.poll() is None, (tmp_path / "app.log").read_text()
            try:
                if httpx.get(page_url).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            assert time.monotonic() < deadline, "the example did not start"
            time.sleep(0.2)
        yield runnel, page_url
    finally:
        app.terminate()
        try:
            app.wait(20)
        except subprocess.TimeoutExpired:
            app.kill()
        runnel.stop()


async def test_a_killed_server_mid_answer_still_ends_with_the_full_answer_once(
        example: tuple[RestartableServer, str], browser: Browser, tmp_path: Path) -> None:
    runnel, page_url = example
    page = await browser.new_page()
    await page.goto(page_url)
    await page.wait_for_function("document.getElementById('state').textContent === 'following'",
                                 timeout=GUARD_MS)
    await page.fill("#prompt", PROMPT)
    await page.click("button")
    # Mid-answer: some live tokens shown, the stored turn not there yet.
    await page.wait_for_function(
        "(document.querySelector('.turn.live')?.textContent || '').split(' ').length > 3",
        timeout=GUARD_MS)
    assert await page.locator(".turn.stored").count() == 0
    await asyncio.to_thread(runnel.restart)  # kill -9, then the same port and database
    full = answer_text(1, PROMPT)
    await page.wait_for_function("document.querySelectorAll('.turn.stored').length >= 1",
                                 timeout=GUARD_MS)
    await page.screenshot(path=str(tmp_path / "agent.png"))
    await asyncio.sleep(1)  # room for a duplicate to show, were there one
    stored = await page.locator(".turn.stored .text").all_text_contents()
    assert stored == [full]
    assert await page.locator(".turn.live").count() == 0
    await page.reload()
    await page.wait_for_function("document.querySelectorAll('.turn.stored').length >= 1",
                                 timeout=GUARD_MS)
    await asyncio.sleep(0.5)
    assert await page.locator(".turn.stored .text").all_text_contents() == [full]
