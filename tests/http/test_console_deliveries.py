"""The console's deliveries panel (ADR 0046): an input stream's pending deliveries (no wait
service: they stay pending) and its real dead letters (a webhook that refuses, one attempt
each, on a server running its workers), as `GET …/deliveries` serves them. The populated
stream is also the console's canonical picture (`docs/console.png`, written when
`RUNNEL_CONSOLE_SCREENSHOT=1`)."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import httpx
from playwright.async_api import Browser

from tests.http.console_support import (
    GUARD_MS,
    browser,
    console_page,
    open_stream,
    screenshot,
    sign_in,
    wait_until,
)
from tests.http.server import RunnelServer, bearer, token
from tests.http.support import GUARD_SECONDS, append, create_stream
from tests.integration.webhook_receiver import Receiver, receiver
from tests.pg import pg_dsn, pg_template

__all__ = ["browser", "pg_dsn", "pg_template", "receiver"]


async def eventually(condition: Callable[[], Awaitable[bool]]) -> None:
    async def poll() -> None:
        while not await condition():
            await asyncio.sleep(0.05)

    await asyncio.wait_for(poll(), GUARD_SECONDS)


async def test_pending_deliveries_show_for_an_input_stream_only(server: RunnelServer,
                                                                browser: Browser,
                                                                tmp_path: Path) -> None:
    secret = token(tenant=f"tenant-{uuid.uuid4().hex[:10]}")
    async with httpx.AsyncClient(base_url=server.api, headers=bearer(secret),
                                 timeout=30) as api:
        await create_stream(api, "run", "in", direction="input")
        await create_stream(api, "run", "out")
        await append(api, "run", "in", ["approve", "reject"])  # no wait service: pending
    page = await console_page(browser)
    await sign_in(page, server.url, secret)
    await open_stream(page, "run", "in")
    await page.wait_for_selector("#deliveries:not([hidden])", timeout=GUARD_MS)
    assert (await page.inner_text("#pending"), await page.inner_text("#dead-count")) == (
        "2", "0")
    assert await page.eval_on_selector_all("#dead-letters tbody tr", "rows => rows.length") == 0
    await screenshot(page, tmp_path, "pending", secret=secret)
    await page.click('#streams button[data-stream="out"]')
    await wait_until(page, "document.getElementById('current').textContent === 'out'"
                           " && document.getElementById('fig-direction').textContent"
                           " === 'output'")
    assert await page.is_hidden("#deliveries")


STEPS = [{"decision": "approve", "step": "refund", "amount": 129.5, "by": "dana"},
         {"decision": "reject", "step": "refund", "amount": 4120.0, "by": "sam"},
         {"decision": "approve", "step": "ship", "carrier": "post", "by": "dana"}]


async def test_dead_letters_show_with_their_attempts_and_error(
        pg_dsn: str, tmp_path: Path, receiver: Receiver, browser: Browser) -> None:
    receiver.statuses = [500, 500]  # the first two deliveries fail: one attempt each
    env = {"RUNNEL_DATABASE_URL": pg_dsn, "RUNNEL_STORAGE": "postgres",
           "RUNNEL_SWEEP_SECONDS": "0.05", "RUNNEL_WAIT_SERVICE": "webhook",
           "RUNNEL_WEBHOOK_URL": receiver.url, "RUNNEL_WEBHOOK_SECRET": receiver.secret,
           "RUNNEL_DELIVERY_MAX_ATTEMPTS": "1", "RUNNEL_KEEPALIVE_SECONDS": "1"}
    server = await asyncio.to_thread(RunnelServer.start, env, tmp_path / "server", True)
    secret = token(tenant="acme", sub="ops")
    try:
        async with httpx.AsyncClient(base_url=server.api, headers=bearer(secret),
                                     timeout=30) as api:
            await populate(api)
            path = "/runs/checkout-8841/streams/approvals"
            await append(api, "checkout-8841", "approvals", STEPS[:2])

            async def dead() -> bool:
                return bool((await api.get(path + "/deliveries")).json()[
                    "dead_letter_count"] == 2)

            await eventually(dead)
            await append(api, "checkout-8841", "approvals", [STEPS[2]])

            async def delivered() -> bool:
                return bool((await api.get(path + "/deliveries")).json()["pending"] == 0)

            await eventually(delivered)
            report = (await api.get(path + "/deliveries")).json()
            assert [(d["sequence"], d["attempts"]) for d in report["dead_letters"]] == [
                (1, 1), (2, 1)]
            assert all(d["last_error"] for d in report["dead_letters"])
            assert report["direction"] == "input" and len(receiver.accepted) == 1

            page = await console_page(browser)
            await sign_in(page, server.url, secret)
            await open_stream(page, "checkout-8841", "approvals")
            await wait_until(page, "document.querySelectorAll('#dead-letters tbody tr')"
                                   ".length === 2")
            rows = await page.eval_on_selector_all(
                "#dead-letters tbody tr", "rows => rows.map(r => [...r.cells]"
                ".map(c => c.textContent))")
            assert rows == [[str(d["sequence"]), str(d["attempts"]), d["last_error"]]
                            for d in report["dead_letters"]]
            assert (await page.inner_text("#pending"), await page.inner_text("#dead-count")) \
                == ("0", "2")
            await live_traffic(api, page)
            await page.click('ol#records li[data-sequence="2"]')
            await page.wait_for_selector("#inspector-fields:not([hidden])", timeout=GUARD_MS)
            await screenshot(page, tmp_path, "dead-letters", secret=secret, canonical=True)
    finally:
        await asyncio.to_thread(server.stop)


async def populate(api: httpx.AsyncClient) -> None:
    """A few runs that look like a tenant's day, for the picture."""
    await create_stream(api, "checkout-8841", "approvals", direction="input",
                        content_class="input.decision", consumers=["agent", "audit"],
                        credit={"max_unread_items": 40, "max_unread_bytes": 16384})
    await create_stream(api, "checkout-8841", "answer", consumers=["ui"])
    await append(api, "checkout-8841", "answer", [f"token {n}" for n in range(24)])
    await create_stream(api, "checkout-8841", "tool-calls")
    for run, streams in (("support-1207", ("answer", "transcript")),
                         ("nightly-report", ("summary",))):
        for stream in streams:
            await create_stream(api, run, stream)
            await append(api, run, stream, [{"line": n} for n in range(5)])
    await api.post("/runs/nightly-report/streams/summary/close")


async def live_traffic(api: httpx.AsyncClient, page: Any) -> None:
    """Bursts of input decisions while the console follows, and acks behind them."""
    for burst in (2, 5, 3, 6, 1):
        await append(api, "checkout-8841", "approvals",
                     [{**STEPS[n % 3], "n": n} for n in range(burst)])
        await asyncio.sleep(1.1)
    head = (await api.get("/runs/checkout-8841/streams/approvals")).json()["status"]["head"]
    for consumer, sequence in (("agent", head - 3), ("audit", head - 12)):
        acked = await api.post(
            f"/runs/checkout-8841/streams/approvals/consumers/{consumer}/ack",
            json={"sequence": sequence})
        assert acked.status_code == 200, acked.text
    await wait_until(page, "head => document.getElementById('fig-head').textContent === "
                           "String(head) && document.querySelector('#consumers "
                           "li[data-consumer=\"audit\"]').dataset.lag === '12'", head)
