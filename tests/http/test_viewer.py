"""The console at `/` following a stream, and the browser follower it uses, `/runnel.js`, in
headless Chromium (see `console_support`): the console shows records appended after it
opened, and after the server restarts it resumes with no gap and no repeat (the browser's
own retry with `Last-Event-ID` after a crash); it shows a step's live text until the step's
stored record arrives (ADR 0019). `runnel.js` on a page of its own: every record once, the two-layer
rules, subscribe tokens renewed at expiry, the end of a closed stream (ADR 0038)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import httpx
import pytest
from playwright.async_api import Browser, Page

from tests.http.console_support import (
    GUARD_MS,
    browser,
    console_page,
    open_stream,
    screenshot,
    sign_in,
)
from tests.http.restart import RestartableServer, restartable_server
from tests.http.server import RunnelServer, bearer, token
from tests.http.support import append, create_stream

__all__ = ["GUARD_MS", "browser"]


@pytest.fixture
def own_server(pg_template: str, tmp_path: Path) -> RestartableServer:  # type: ignore[misc]
    with restartable_server(pg_template, tmp_path) as server:
        yield server


async def text(page: Page, element_id: str) -> str:
    return (await page.text_content(f"#{element_id}")) or ""


async def wait_for_count(page: Page, n: int) -> None:
    await page.wait_for_function(
        f"document.querySelectorAll('ol#records li[data-sequence]').length >= {n}",
        timeout=GUARD_MS)


def _graceful_restart(server: RestartableServer) -> None:
    """SIGTERM (the stream ends with reason `shutdown`, ADR 0029), then a start."""
    server.stop()
    server.start()


@pytest.mark.parametrize("restart", [RestartableServer.restart, _graceful_restart],
                         ids=["crash", "graceful"])
async def test_the_viewer_follows_across_a_server_restart(own_server: RestartableServer,
                                                          browser: Browser,
                                                          run_id: str, restart: Any) -> None:
    secret = token()
    async with httpx.AsyncClient(base_url=own_server.api, headers=bearer(secret),
                                 timeout=30) as api:
        response = await asyncio.to_thread(httpx.get, own_server.url + "/")  # no token
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("text/html")
        await create_stream(api, run_id)
        await append(api, run_id, "s", ["before-1", "before-2"])

        page = await console_page(browser)
        subscribes: list[Any] = []
        page.on("request", lambda request: subscribes.append(request)
                if "/subscribe" in request.url and "-token" not in request.url else None)
        await sign_in(page, own_server.url, secret)
        await open_stream(page, run_id, "s")
        await wait_for_count(page, 2)
        await append(api, run_id, "s", ["after-3", "after-4", "after-5"])
        await wait_for_count(page, 5)

        await asyncio.to_thread(restart, own_server)
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
        resumed = [(await request.all_headers()).get("last-event-id")
                   for request in subscribes[1:]]
        if restart is RestartableServer.restart:
            # A dropped connection: the browser retried by itself, from the last record shown.
            assert "5" in resumed, resumed
            assert all("after=" not in request.url for request in subscribes)
        else:
            # `end` (shutdown): runnel.js reconnected itself, after the last record shown.
            assert any("after=5" in request.url for request in subscribes[1:])
        await screenshot(page, Path(own_server.server.log).parent, "viewer", secret=secret)


async def publish(api: httpx.AsyncClient, run_id: str, chunks: list[Any], source: str,
                  attempt: int = 1, index: int = 0) -> None:
    response = await api.post(f"/runs/{run_id}/streams/s/live",
                              json={"chunks": chunks, "source": source, "attempt": attempt,
                                    "index": index})
    assert response.status_code == 202, response.text


async def live_text(page: Page, source: str) -> str | None:
    """The live text the page shows for `source` (None: no live item for it)."""
    item = await page.query_selector(f'ol#records li.live[data-source="{source}"] .text')
    return None if item is None else await item.text_content()


async def wait_for_live_text(page: Page, source: str, expected: str) -> None:
    await page.wait_for_function(
        "([source, expected]) => { const item = document.querySelector("
        "`ol#records li.live[data-source=\"${source}\"] .text`);"
        " return item !== null && item.textContent === expected; }",
        arg=[source, expected], timeout=GUARD_MS)


async def test_the_viewer_replaces_a_steps_live_text_with_its_stored_record(
        server: RunnelServer, api: httpx.AsyncClient, browser: Browser, run_id: str,
        tmp_path: Path) -> None:
    await create_stream(api, run_id)
    await append(api, run_id, "s", ["start"])
    page = await console_page(browser)
    secret = token()
    await sign_in(page, server.url, secret)
    await open_stream(page, run_id, "s")
    await wait_for_count(page, 1)

    await publish(api, run_id, ["Hel", "lo"], "turn-1")
    await publish(api, run_id, [{"text": "Wor"}], "turn-2")
    await wait_for_live_text(page, "turn-2", "Wor")
    assert await live_text(page, "turn-1") == "Hello"

    response = await api.post(f"/runs/{run_id}/streams/s/records", json={"records": [
        {"payload": {"text": "Hello"}, "idempotency_key": "turn-1"}]})
    assert response.status_code == 201, response.text
    await wait_for_count(page, 2)
    await page.wait_for_function(
        "document.querySelector('ol#records li.live[data-source=\"turn-1\"]') === null",
        timeout=GUARD_MS)
    assert await live_text(page, "turn-2") == "Wor"

    # turn-1 is settled: a straggler is dropped (turn-2's chunk shows it went through).
    await publish(api, run_id, ["lo!"], "turn-1", index=2)
    await publish(api, run_id, [{"text": "ld"}], "turn-2", index=1)
    await wait_for_live_text(page, "turn-2", "World")
    assert await live_text(page, "turn-1") is None

    # A retry of turn-2 replaces the text of its first attempt; attempt 1 stragglers drop.
    await publish(api, run_id, ["Earth"], "turn-2", attempt=2)
    await wait_for_live_text(page, "turn-2", "Earth")
    await publish(api, run_id, ["!!"], "turn-2", attempt=1, index=2)
    await publish(api, run_id, ["m"], "marker")
    await wait_for_live_text(page, "marker", "m")
    assert await live_text(page, "turn-2") == "Earth"
    assert await text(page, "live-dropped") == "2"

    # A live item stays where its step started; records are appended in sequence order.
    shown = await page.eval_on_selector_all(
        "ol#records li", "items => items.map(i => i.dataset.sequence || i.dataset.source)")
    assert shown == ["1", "turn-2", "2", "marker"]
    assert '{"text":"Hello"}' in (await text(page, "records"))
    await screenshot(page, tmp_path, "two-layers", secret=secret)


async def test_the_viewer_follows_across_subscribe_token_expiries(
        server: RunnelServer, api: httpx.AsyncClient, browser: Browser, run_id: str,
        tmp_path: Path) -> None:
    pasted = token()
    await create_stream(api, run_id)
    await append(api, run_id, "s", ["one", "two"])
    page = await console_page(browser)
    subscribe_urls: list[str] = []
    page.on("request", lambda request: subscribe_urls.append(request.url)
            if "/subscribe?" in request.url else None)
    await sign_in(page, server.url, pasted, query="?ttl=2")
    await open_stream(page, run_id, "s")
    await wait_for_count(page, 2)
    for renewals, payload in ((1, "three"), (2, "four")):
        await page.wait_for_function(
            f"Number(document.getElementById('renewals').textContent) >= {renewals}",
            timeout=GUARD_MS)
        await append(api, run_id, "s", [payload])
        await wait_for_count(page, renewals + 2)
    await api.post(f"/runs/{run_id}/streams/s/close")
    await page.wait_for_function("document.getElementById('state').textContent === 'closed'",
                                 timeout=GUARD_MS)

    sequences = await page.eval_on_selector_all(
        "ol#records li[data-sequence]", "items => items.map(i => Number(i.dataset.sequence))")
    assert sequences == [1, 2, 3, 4]
    assert (await text(page, "gaps"), await text(page, "duplicates")) == ("0", "0")
    assert int(await text(page, "renewals")) >= 2
    assert len(subscribe_urls) >= 3
    assert all("access_token=" in url and pasted not in url for url in subscribe_urls)
    await screenshot(page, tmp_path, "renewals", secret=pasted)


FOLLOWER_PAGE = """async ([run, token, ttl]) => {
  const { follow } = await import("/runnel.js");
  window.seen = { records: [], live: [], ends: [], states: [] };
  window.following = follow({
    run, stream: "s", token, ttlSeconds: ttl, live: true,
    onRecord: (record) => window.seen.records.push(record),
    onLive: (chunk, { source, attempt, supersedes }) =>
      window.seen.live.push([chunk, source, attempt, supersedes]),
    onEnd: (end) => window.seen.ends.push(end),
    onState: (text) => window.seen.states.push(text),
  });
}"""


async def seen(page: Page, name: str) -> Any:
    return await page.evaluate(f"window.seen.{name}")


async def wait_until(page: Page, condition: str) -> None:
    await page.wait_for_function(condition, timeout=GUARD_MS)


async def test_runnel_js_is_served_without_a_token_as_a_module(server: RunnelServer) -> None:
    response = await asyncio.to_thread(httpx.get, server.url + "/runnel.js")
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/javascript")
    assert "export function follow" in response.text
    code = [line for line in response.text.splitlines() if not line.lstrip().startswith("//")]
    assert not [line for line in code if line.lstrip().startswith("import ")
                or "require(" in line]  # no dependencies


async def test_runnel_js_follows_both_layers_renews_its_token_and_ends(
        server: RunnelServer, api: httpx.AsyncClient, browser: Browser, run_id: str) -> None:
    pasted = token()
    await create_stream(api, run_id)
    await append(api, run_id, "s", ["one"])
    page = await browser.new_page()
    urls: list[str] = []
    page.on("request", lambda request: urls.append(request.url))
    await page.goto(f"{server.url}/healthz")  # any page of the server's origin
    await page.evaluate(FOLLOWER_PAGE, [run_id, pasted, 2])
    await wait_until(page, "window.seen.records.length >= 1")

    await publish(api, run_id, ["Hel"], "turn-1")
    await publish(api, run_id, ["Hi"], "turn-1", attempt=2)
    await publish(api, run_id, ["stale"], "turn-1", attempt=1, index=1)
    await publish(api, run_id, ["m1"], "marker")
    await wait_until(page, "window.seen.live.length >= 3")
    response = await api.post(f"/runs/{run_id}/streams/s/records", json={"records": [
        {"payload": "Hi there", "idempotency_key": "turn-1"}]})
    assert response.status_code == 201, response.text
    await wait_until(page, "window.seen.records.length >= 2")
    await publish(api, run_id, ["late"], "turn-1", attempt=2, index=1)
    await publish(api, run_id, ["m2"], "marker")
    await wait_until(page, "window.seen.live.length >= 4")
    assert await seen(page, "live") == [["Hel", "turn-1", 1, False], ["Hi", "turn-1", 2, True],
                                        ["m1", "marker", 1, False],
                                        ["m2", "marker", 1, False]]

    # Two-second subscribe tokens: the stream ends at each expiry and the follower resumes.
    await wait_until(page, "window.following.state.renewals >= 2")
    await append(api, run_id, "s", ["three"])
    await api.post(f"/runs/{run_id}/streams/s/close")
    await wait_until(page, "window.seen.ends.length >= 1")
    records = await seen(page, "records")
    assert [record["sequence"] for record in records] == [1, 2, 3]
    assert [record["payload"] for record in records] == ["one", "Hi there", "three"]
    assert await seen(page, "ends") == [{"reason": "closed", "last_sequence": 3}]
    state = await page.evaluate("window.following.state")
    assert (state["gaps"], state["duplicates"], state["steps"]["dropped"]) == (0, 0, 2)
    subscribes = [url for url in urls if "/subscribe?" in url]
    assert len(subscribes) >= 3
    assert all("access_token=" in url and pasted not in url for url in subscribes)
    assert any("after=2" in url or "after=3" in url for url in subscribes[1:])


async def test_runnel_js_stops_when_the_token_is_refused(
        server: RunnelServer, api: httpx.AsyncClient, browser: Browser, run_id: str) -> None:
    await create_stream(api, run_id)
    page = await browser.new_page()
    await page.goto(f"{server.url}/healthz")
    await page.evaluate(FOLLOWER_PAGE, [run_id, "not-a-token", 0])
    await wait_until(page, "window.seen.states.some((s) => s.startsWith('refused'))")
    assert await seen(page, "states") == ["refused: 401 unauthenticated"]
    assert await page.evaluate("window.following.state.closed") is True
