"""The console at `/` (ADR 0046), panel by panel, in headless Chromium against a real
server: the tenant's runs (never another tenant's), a stream's figures and its consumers'
lag bars against real acks, the credit used out of the unread ceiling, the record
inspector (hostile content shown as text), the live sparkline, and sign-in (the token never
in a URL, in sessionStorage only when ticked). The page keeps a self-only policy."""

from __future__ import annotations

import asyncio
import json
import uuid
from pathlib import Path
from typing import Any

import httpx
from playwright.async_api import Browser, Page

from tests.http.console_support import (
    GUARD_MS,
    browser,
    console_page,
    open_run,
    open_stream,
    screenshot,
    sign_in,
    wait_until,
)
from tests.http.server import RunnelServer, bearer, token
from tests.http.support import append, create_stream

__all__ = ["browser"]

ADMIN = ("streams:read", "streams:write", "streams:admin")


def tenant() -> str:
    return f"tenant-{uuid.uuid4().hex[:10]}"


def client(server: RunnelServer, secret: str) -> httpx.AsyncClient:
    return httpx.AsyncClient(base_url=server.api, headers=bearer(secret), timeout=30)


async def attribute(page: Page, selector: str, name: str) -> str | None:
    return await page.get_attribute(selector, name)


async def test_the_console_is_plain_files_under_a_self_only_policy(
        server: RunnelServer, browser: Browser, tmp_path: Path) -> None:
    page_response = await asyncio.to_thread(httpx.get, server.url + "/")
    policy = page_response.headers["content-security-policy"]
    assert "default-src 'self'" in policy and "script-src 'self';" in policy
    assert "unsafe" not in policy and "http" not in policy
    assert page_response.headers["cache-control"] == "no-cache"
    html = page_response.text
    assert "<style" not in html and "style=" not in html
    assert all('src="/' in tag for tag in html.split("<script")[1:])  # no inline script
    for name, media in (("console.css", "text/css"), ("app.js", "text/javascript"),
                        ("dom.js", "text/javascript"), ("stream.js", "text/javascript"),
                        ("records.js", "text/javascript")):
        served = await asyncio.to_thread(httpx.get, f"{server.url}/console/{name}")
        assert served.status_code == 200 and served.headers["content-type"].startswith(media)
        assert served.headers["cache-control"] == "no-cache"
        assert "http://" not in served.text and "https://" not in served.text  # no CDN
    for missing in ("nope.js", "..%2Fconsole.html", "app.js.map"):
        assert (await asyncio.to_thread(httpx.get, f"{server.url}/console/{missing}")
                ).status_code == 404

    # Under the policy itself (no bypass), the console signs in and lists, and nothing is
    # refused by it.
    secret = token(tenant=tenant())
    async with client(server, secret) as api:
        await create_stream(api, "policed")
    context = await browser.new_context()
    page = await context.new_page()
    refused: list[str] = []
    page.on("console", lambda message: refused.append(message.text)
            if "Content Security Policy" in message.text else None)
    await page.goto(server.url + "/")
    await page.fill("#token", secret)
    await page.click("#sign-in")
    await page.wait_for_selector('#runs button[data-run="policed"]', timeout=GUARD_MS)
    assert refused == []
    await screenshot(page, tmp_path, "policy", secret=secret)


async def test_the_runs_list_shows_the_tenants_runs_and_never_anothers(
        server: RunnelServer, browser: Browser, tmp_path: Path) -> None:
    ours, theirs = token(tenant=tenant()), token(tenant=tenant())
    async with client(server, ours) as mine, client(server, theirs) as other:
        for run, streams in (("order-17", 3), ("order-02", 1), ("shared-name", 2)):
            for n in range(streams):
                await create_stream(mine, run, f"s{n}")
        await create_stream(other, "their-secret-run")
        await create_stream(other, "shared-name", "their-stream")
    page = await console_page(browser)
    await sign_in(page, server.url, ours)
    await page.wait_for_selector("#runs button", timeout=GUARD_MS)
    runs = await page.eval_on_selector_all("#runs button", "bs => bs.map(b => b.dataset.run)")
    assert runs == ["order-02", "order-17", "shared-name"]
    assert "their-secret-run" not in await page.inner_text("body")
    assert await page.inner_text('#runs button[data-run="order-17"] .detail') == "3 streams"

    await page.click('#runs button[data-run="shared-name"]')
    await wait_until(page, "document.querySelectorAll('#streams button').length === 2")
    streams = await page.eval_on_selector_all("#streams button",
                                              "bs => bs.map(b => b.dataset.stream)")
    assert streams == ["s0", "s1"]  # not the other tenant's stream of the same run name
    assert "#run=shared-name" in page.url
    await screenshot(page, tmp_path, "runs", secret=ours)


async def test_the_stream_panel_shows_its_figures_lag_bars_and_credit_against_real_acks(
        server: RunnelServer, browser: Browser, tmp_path: Path) -> None:
    secret = token(tenant=tenant(), scopes=ADMIN)
    async with client(server, secret) as api:
        await create_stream(api, "run", "answer", consumers=["ui", "audit"],
                            credit={"max_unread_items": 10, "max_unread_bytes": 4096})
        await append(api, "run", "answer", [f"token-{n}" for n in range(6)])
        for consumer, sequence in (("ui", 4), ("audit", 1)):
            acked = await api.post(f"/runs/run/streams/answer/consumers/{consumer}/ack",
                                   json={"sequence": sequence})
            assert acked.status_code == 200, acked.text
        page = await console_page(browser)
        await sign_in(page, server.url, secret)
        await open_stream(page, "run", "answer")
        status = (await api.get("/runs/run/streams/answer")).json()["status"]
        assert await page.inner_text("#fig-head") == "6"
        assert await page.inner_text("#fig-earliest") == str(status["earliest"])
        assert await page.inner_text("#fig-closed") == "no"
        assert await page.inner_text("#fig-hold") == "none"
        bars = await page.eval_on_selector_all(
            "#consumers li", "ls => ls.map(l => [l.dataset.consumer, Number(l.dataset.acked),"
            " Number(l.dataset.lag), Number(l.dataset.fraction)])")
        assert bars == [["ui", 4, 2, round(4 / 6, 4)], ["audit", 1, 5, round(1 / 6, 4)]]
        width = await page.eval_on_selector(
            '#consumers li[data-consumer="ui"] .fill',
            "f => f.getBoundingClientRect().width / f.parentElement.getBoundingClientRect().width")
        assert abs(width - 4 / 6) < 0.05  # drawn, not only labelled
        unread = status["unread"]
        assert unread["items"] == 5  # after the slowest consumer (audit, at 1)
        assert await attribute(page, "#credit-items", "data-used") == "5"
        assert await attribute(page, "#credit-items", "data-ceiling") == "10"
        assert await attribute(page, "#credit-bytes", "data-used") == str(unread["bytes"])
        assert await attribute(page, "#credit-bytes", "data-ceiling") == "4096"

        # Acks, a hold and a close reach the open panel.
        await api.post("/runs/run/streams/answer/consumers/audit/ack", json={"sequence": 6})
        assert (await api.put("/runs/run/streams/answer/legal-hold",
                              json={"held": True, "reason": "audit"})).status_code == 200
        assert (await api.post("/runs/run/streams/answer/close")).status_code == 200
        await wait_until(page, "document.querySelector('#consumers li[data-consumer=\"audit\"]')"
                               ".dataset.lag === '0' && document.getElementById('fig-hold')"
                               ".textContent === 'held' && document.getElementById("
                               "'fig-closed').textContent === 'yes'")
        assert await attribute(page, "#credit-items", "data-used") == "2"  # ui at 4 now
        assert await page.inner_text('#streams button[data-stream="answer"] .detail') == \
            "head 6 · closed · held"
        assert await attribute(page, '#consumers li[data-consumer="audit"]',
                               "data-fraction") == "1.0000"
        await screenshot(page, tmp_path, "stream-panel", secret=secret)


async def test_the_inspector_shows_a_record_and_hostile_content_stays_text(
        server: RunnelServer, browser: Browser, tmp_path: Path) -> None:
    secret = token(tenant=tenant())
    hostile = "<img src=x onerror=window.pwned=1><script>window.pwned=2</script>"
    async with client(server, secret) as api:
        await create_stream(api, "run", "s")
        response = await api.post("/runs/run/streams/s/records", json={"records": [
            {"payload": {"note": hostile, "n": [1, 2]}, "idempotency_key": "turn-1"},
            {"data": "AAECAw=="}]})
        assert response.status_code == 201, response.text
        stored = (await api.get("/runs/run/streams/s/records")).json()["records"]
    page = await console_page(browser)
    await sign_in(page, server.url, secret)
    await open_stream(page, "run", "s")
    await page.wait_for_selector('ol#records li[data-sequence="2"]', timeout=GUARD_MS)
    await page.click('ol#records li[data-sequence="1"]')
    await page.wait_for_selector("#inspector-fields:not([hidden])", timeout=GUARD_MS)
    assert await page.inner_text("#ins-sequence") == "1"
    assert await page.inner_text("#ins-appended") == stored[0]["appended_at"]
    assert await page.inner_text("#ins-type") == stored[0]["content_type"]
    assert await page.inner_text("#ins-key") == "turn-1"
    size = len(json.dumps(stored[0]["payload"], separators=(",", ":")).encode())
    assert await page.inner_text("#ins-size") == f"{size} bytes"
    assert await page.text_content("#ins-body") == json.dumps(stored[0]["payload"], indent=2)
    assert hostile in (await page.inner_text("ol#records"))  # shown as text
    assert await page.evaluate("document.querySelectorAll('img, main script').length") == 0
    assert await page.evaluate("window.pwned") is None  # nothing ran (the policy bypassed)

    await page.click('ol#records li[data-sequence="2"]')
    await wait_until(page, "document.getElementById('ins-sequence').textContent === '2'")
    assert await page.inner_text("#ins-body-label") == "data"
    assert await page.inner_text("#ins-size") == "4 bytes"
    assert await page.inner_text("#ins-key") == "—"
    await screenshot(page, tmp_path, "inspector", secret=secret)


async def test_the_sparkline_draws_the_records_that_arrive_live(
        server: RunnelServer, browser: Browser, tmp_path: Path) -> None:
    secret = token(tenant=tenant())
    async with client(server, secret) as api:
        await create_stream(api, "run", "s")
        await append(api, "run", "s", ["old-1", "old-2", "old-3"])  # the backlog
        page = await console_page(browser)
        await sign_in(page, server.url, secret)
        await open_stream(page, "run", "s")
        await page.wait_for_selector('ol#records li[data-sequence="3"]', timeout=GUARD_MS)
        assert await attribute(page, "#sparkline", "data-total") == "0"
        flat = await attribute(page, "#sparkline .line", "points")
        await append(api, "run", "s", ["new-1", "new-2"])
        await append(api, "run", "s", ["new-3", "new-4", "new-5"])
        await wait_until(page, "document.getElementById('sparkline').dataset.total === '5'")
        points = await attribute(page, "#sparkline .line", "points")
    assert points is not None and points != flat
    heights = [float(point.split(",")[1]) for point in points.split()]
    assert len(heights) == 60 and min(heights) < max(heights)  # a peak above the baseline
    assert int(await page.inner_text("#peak")) >= 1
    await screenshot(page, tmp_path, "sparkline", secret=secret)


async def requests_of(page: Page) -> list[str]:
    urls: list[str] = []
    page.on("request", lambda request: urls.append(request.url))
    return urls


async def test_the_token_never_enters_a_url_nor_storage_unless_ticked(
        server: RunnelServer, browser: Browser, tmp_path: Path) -> None:
    secret = token(tenant=tenant())
    async with client(server, secret) as api:
        await create_stream(api, "run-a", "s")
        await create_stream(api, "run-b", "t")
        await append(api, "run-a", "s", ["x"])
    page = await console_page(browser)
    urls = await requests_of(page)
    await sign_in(page, server.url, secret)
    await page.click('#runs button[data-run="run-a"]')
    await page.click('#streams button[data-stream="s"]')
    await wait_until(page, "document.getElementById('state').textContent === 'following'")
    await page.click('#runs button[data-run="run-b"]')
    await page.wait_for_selector('#streams button[data-stream="t"]', timeout=GUARD_MS)
    locations = [page.url]
    for _ in range(3):  # back through every history entry the console made
        await page.go_back()
        locations.append(page.url)
    assert locations[1].endswith("#run=run-a&stream=s")
    assert all(secret not in url for url in locations + urls)
    subscribes = [url for url in urls if "/subscribe?" in url]
    assert subscribes and all("access_token=" in url for url in subscribes)
    assert await page.evaluate("sessionStorage.length") == 0
    assert await page.evaluate("localStorage.length") == 0
    await screenshot(page, tmp_path, "unticked", secret=secret)

    await page.reload()  # kept in memory only: a reload asks again
    await page.wait_for_selector("#sign-in-panel:not([hidden])", timeout=GUARD_MS)
    assert await page.is_hidden("#console")

    # An old-style link with the token in its query: dropped from the location, not used.
    await page.goto(f"{server.url}/?token={secret}&ttl=5")
    await page.wait_for_function("!location.search.includes('token')", timeout=GUARD_MS)
    assert page.url.endswith("/?ttl=5")
    assert await page.is_hidden("#console")


async def test_a_ticked_box_keeps_the_token_in_this_tab_until_sign_out(
        server: RunnelServer, browser: Browser, tmp_path: Path) -> None:
    secret = token(tenant=tenant())
    async with client(server, secret) as api:
        await create_stream(api, "kept-run")
    page = await console_page(browser)
    urls = await requests_of(page)
    await sign_in(page, server.url, secret, remember=True)
    stored: dict[str, Any] = await page.evaluate("({...sessionStorage})")
    assert list(stored.values()) == [secret]
    assert await page.evaluate("localStorage.length") == 0
    await page.reload()
    await page.wait_for_selector('#runs button[data-run="kept-run"]', timeout=GUARD_MS)
    assert await page.is_checked("#remember")
    assert await page.is_hidden("#sign-in-panel")
    await screenshot(page, tmp_path, "ticked", secret=secret)

    other_tab = await browser.new_page()  # sessionStorage is this tab's only
    await other_tab.goto(server.url + "/")
    await other_tab.wait_for_selector("#sign-in-panel:not([hidden])")
    await other_tab.close()

    await page.click("#sign-out")
    await page.wait_for_selector("#sign-in-panel:not([hidden])", timeout=GUARD_MS)
    assert await page.evaluate("sessionStorage.length") == 0
    await page.reload()
    await page.wait_for_selector("#sign-in-panel:not([hidden])", timeout=GUARD_MS)
    assert all(secret not in url for url in urls)


async def test_a_refused_token_stays_signed_out(server: RunnelServer, browser: Browser,
                                                tmp_path: Path) -> None:
    page = await console_page(browser)
    await page.goto(server.url + "/")
    await page.check("#remember")
    await page.fill("#token", "not-a-token")
    await page.click("#sign-in")
    await wait_until(page, "document.getElementById('sign-in-error').textContent !== ''")
    assert await page.inner_text("#sign-in-error") == "401 unauthenticated"
    assert await page.is_hidden("#console")
    assert await page.evaluate("sessionStorage.length") == 0
    assert await page.input_value("#token") == ""
    await screenshot(page, tmp_path, "refused", secret="not-a-token")


async def test_a_run_past_the_first_page_opens_by_its_id(server: RunnelServer,
                                                         browser: Browser,
                                                         tmp_path: Path) -> None:
    secret = token(tenant=tenant())
    async with client(server, secret) as api:
        for n in range(55):  # the console shows runs 50 at a time
            await create_stream(api, f"run-{n:02d}")
    page = await console_page(browser)
    await sign_in(page, server.url, secret)
    await wait_until(page, "document.querySelectorAll('#runs button').length === 50")
    assert await page.is_visible("#more-runs")
    await page.click("#more-runs")
    await wait_until(page, "document.querySelectorAll('#runs button').length === 55")
    assert await page.is_hidden("#more-runs")
    await open_run(page, "run-54")
    await screenshot(page, tmp_path, "more-runs", secret=secret)
