"""`useRunnelStream` in headless Chromium (ADR 0069): a page bundled with esbuild from the
package (React included, no CDN), served from another origin than the server's, writes
through the SDK and shows what the hook gives: records, live text replaced by its record,
and, after a reload, the same stream resumed at the consumer's ack with nothing twice."""

from __future__ import annotations

import asyncio
import json
import uuid

import httpx
from playwright.async_api import Browser, Page, Request

from tests.http.console_support import GUARD_MS, browser
from tests.http.restart import RestartableServer
from tests.http.server import bearer, token
from tests.sdk_typescript.conftest import PACKAGE, PageOrigin, built
from tests.sdk_typescript.test_typescript_sdk import node

__all__ = ["browser"]

RUN, STREAM = f"react-{uuid.uuid4().hex[:8]}", "answer"


def bundle(origin: PageOrigin) -> None:
    """The test page and its script, built from the package's own files."""
    esbuild = built("node_modules/.bin/esbuild")
    built("dist/react.js")
    done = node([str(esbuild), "test/page/app.jsx", "--bundle", "--format=esm", "--minify",
                 "--jsx=automatic", "--define:process.env.NODE_ENV=\"production\"",
                 f"--outfile={origin.directory / 'app.js'}"], PACKAGE)
    assert done.returncode == 0, done.stderr
    (origin.directory / "index.html").write_bytes((PACKAGE / "test/page/index.html").read_bytes())


async def shown(page: Page) -> list[list[str]]:
    items: list[list[str]] = await page.eval_on_selector_all(
        "#records li", "items => items.map(li => [li.dataset.sequence, li.textContent])")
    return items


async def wait_for(page: Page, condition: str, arg: object = None) -> None:
    await page.wait_for_function(condition, arg=arg, timeout=GUARD_MS)


async def test_the_hook_shows_records_and_live_text_and_resumes_after_a_reload(
        browser: Browser, page_origin: PageOrigin, runnel: RestartableServer) -> None:
    bundle(page_origin)
    owner = token()
    async with httpx.AsyncClient(base_url=runnel.api, headers=bearer(owner)) as api:
        created = await api.post(f"/runs/{RUN}/streams", json={
            "stream_id": STREAM, "content_class": "output.text", "consumers": ["ui"]})
        assert created.status_code == 201, created.text
        page = await (await browser.new_context()).new_page()
        page.set_default_timeout(GUARD_MS)
        subscriptions: list[Request] = []
        page.on("request", lambda request: subscriptions.append(request)
                if request.url.split("?")[0].endswith("/subscribe") else None)
        settings = {"baseUrl": runnel.url, "token": owner, "run": RUN, "stream": STREAM}
        await page.add_init_script(f"window.RUNNEL = {json.dumps(settings)};")
        await page.goto(page_origin.url + "/index.html")
        await wait_for(page, "document.getElementById('status').textContent === 'following'")

        await page.evaluate("writer.append([{payload: 'one'}, {payload: 'two'}])")
        await wait_for(page, "document.querySelectorAll('#records li').length === 2")
        await page.evaluate("writer.publishLive(['Hel', 'lo'], {source: 'turn-1', attempt: 1})")
        await wait_for(page, "document.querySelector('#live li[data-source=\"turn-1\"]')"
                             "?.textContent === 'Hello'")
        await page.evaluate("writer.append([{payload: 'Hello!', idempotency_key: 'turn-1'}])")
        await wait_for(page, "document.querySelectorAll('#records li').length === 3"
                             " && document.querySelectorAll('#live li').length === 0")
        assert await shown(page) == [["1", "one"], ["2", "two"], ["3", "Hello!"]]
        await wait_for_ack(api, 3)  # the hook acked what it showed

        await page.reload()
        await wait_for(page, "document.getElementById('status').textContent === 'following'")
        assert await page.text_content("#resumed") == "3"
        assert subscriptions[-1].headers.get("last-event-id") == "3"
        await page.evaluate("writer.append([{payload: 'four'}]).then(() => writer.close())")
        await wait_for(page, "document.getElementById('status').textContent === 'closed'")
        assert await shown(page) == [["1", "one"], ["2", "two"], ["3", "Hello!"], ["4", "four"]]
        assert await page.query_selector("#error") is None
        await wait_for_ack(api, 4)


async def wait_for_ack(api: httpx.AsyncClient, sequence: int) -> None:
    status: dict[str, object] = {}
    for _ in range(int(GUARD_MS // 50)):
        status = (await api.get(f"/runs/{RUN}/streams/{STREAM}")).json()["status"]
        if status["consumers"]["ui"] >= sequence:  # type: ignore[index]
            return
        await asyncio.sleep(0.05)
    raise AssertionError(f"the hook never acked {sequence}: {status}")
