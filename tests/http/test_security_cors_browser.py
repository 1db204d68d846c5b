"""CORS in a real browser (ADR 0062): headless Chromium on a page of a second origin, the one
`RUNNEL_CORS_ORIGINS` lists, appends, reads (seeing `Retry-After` and `X-Request-ID`) and
subscribes with `EventSource`; a page of a third origin can do none of it, and what it
tried left nothing behind."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpx
import pytest
from playwright.async_api import Browser

from tests.http.conftest import ServerPool
from tests.http.console_support import GUARD_MS, browser
from tests.http.server import RunnelServer, bearer, token

__all__ = ["browser"]

PAGE = b"<!doctype html><meta charset=utf-8><title>another origin</title><p>a web app"

APP = """async ({api, token, run, stream}) => {
  const headers = {"Authorization": `Bearer ${token}`, "Content-Type": "application/json"};
  const base = `${api}/runs/${run}/streams`;
  const created = await fetch(base, {method: "POST", headers, body: JSON.stringify(
    {stream_id: stream, content_class: "output.text", consumers: ["ui"],
     credit: {max_unread_items: 2}})});
  const appended = await fetch(`${base}/${stream}/records`, {method: "POST", headers,
    body: JSON.stringify({records: [{payload: "a"}, {payload: "b"}]})});
  const refused = await fetch(`${base}/${stream}/records`, {method: "POST", headers,
    body: JSON.stringify({records: [{payload: "c"}]})});
  const read = await fetch(`${base}/${stream}/records?after=0`, {headers});
  const page = await read.json();
  const minted = await (await fetch(`${base}/${stream}/subscribe-token`,
                                    {method: "POST", headers})).json();
  await fetch(`${base}/${stream}/close`, {method: "POST", headers});
  const followed = await new Promise((resolve, reject) => {
    const seen = [];
    const source = new EventSource(
      `${base}/${stream}/subscribe?access_token=${encodeURIComponent(minted.token)}`);
    source.addEventListener("record", (event) => seen.push(Number(event.lastEventId)));
    source.addEventListener("end", (event) => {
      source.close(); resolve({seen, end: JSON.parse(event.data)}); });
    source.onerror = () => { source.close(); reject(new Error("EventSource failed")); };
  });
  return {created: created.status, appended: appended.status, refused: refused.status,
          retryAfter: refused.headers.get("retry-after"),
          requestId: read.headers.get("x-request-id"),
          records: page.records.map((record) => record.sequence), followed};
}"""

INTRUDER = """async ({api, token, run, stream, subscribeToken}) => {
  const headers = {"Authorization": `Bearer ${token}`, "Content-Type": "application/json"};
  const base = `${api}/runs/${run}/streams`;
  const outcome = async (attempt) => {
    try { const response = await attempt(); return `answered ${response.status}`; }
    catch (error) { return `refused: ${error.name}`; }
  };
  const create = await outcome(() => fetch(base, {method: "POST", headers, body:
    JSON.stringify({stream_id: stream, content_class: "output.text"})}));
  const read = await outcome(() => fetch(`${base}/s/records?after=0`, {headers}));
  const follow = await new Promise((resolve) => {
    const source = new EventSource(`${base}/s/subscribe?access_token=${subscribeToken}`);
    source.addEventListener("record", () => { source.close(); resolve("a record arrived"); });
    source.onerror = () => { source.close(); resolve("refused"); };
  });
  return {create, read, follow};
}"""


class Origin:
    """A web page's origin: a static server on its own port."""

    def __init__(self) -> None:
        class Page(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                self.send_response(200)
                self.send_header("Content-Type", "text/html; charset=utf-8")
                self.send_header("Content-Length", str(len(PAGE)))
                self.end_headers()
                self.wfile.write(PAGE)

            def log_message(self, *_: Any) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Page)
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        threading.Thread(target=self._server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()


@pytest.fixture(scope="module")
def origins() -> Iterator[tuple[Origin, Origin]]:
    allowed, other = Origin(), Origin()
    try:
        yield allowed, other
    finally:
        allowed.close()
        other.close()


@pytest.fixture(scope="module")
def cors_server(servers: ServerPool, origins: tuple[Origin, Origin]) -> RunnelServer:
    return servers.get({"RUNNEL_CORS_ORIGINS": origins[0].url})[0]


async def test_a_listed_origins_page_appends_reads_and_subscribes(
        browser: Browser, origins: tuple[Origin, Origin], cors_server: RunnelServer,
        run_id: str) -> None:
    page = await (await browser.new_context()).new_page()
    page.set_default_timeout(GUARD_MS)
    await page.goto(origins[0].url)
    result = await page.evaluate(APP, {"api": cors_server.api, "token": token(),
                                       "run": run_id, "stream": "s"})
    assert (result["created"], result["appended"], result["refused"]) == (201, 201, 429)
    assert result["retryAfter"] is not None and int(result["retryAfter"]) >= 1
    assert result["requestId"]  # exposed: the page can quote it in a bug report
    assert result["records"] == [1, 2]
    assert result["followed"] == {"seen": [1, 2],
                                  "end": {"reason": "closed", "last_sequence": 2}}


async def test_another_origins_page_can_do_none_of_it_and_leaves_nothing(
        browser: Browser, origins: tuple[Origin, Origin], cors_server: RunnelServer,
        run_id: str) -> None:
    async with httpx.AsyncClient(base_url=cors_server.api, headers=bearer(token())) as api:
        assert (await api.post(f"/runs/{run_id}/streams", json={
            "stream_id": "s", "content_class": "output.text"})).status_code == 201
        assert (await api.post(f"/runs/{run_id}/streams/s/records", json={
            "records": [{"payload": "x"}]})).status_code == 201
        minted = (await api.post(f"/runs/{run_id}/streams/s/subscribe-token")).json()
        page = await (await browser.new_context()).new_page()
        page.set_default_timeout(GUARD_MS)
        await page.goto(origins[1].url)
        result = await page.evaluate(INTRUDER, {
            "api": cors_server.api, "token": token(), "run": run_id, "stream": "planted",
            "subscribeToken": minted["token"]})
        assert result == {"create": "refused: TypeError", "read": "refused: TypeError",
                          "follow": "refused"}
        listed = (await api.get(f"/runs/{run_id}/streams")).json()
    assert [stream["stream_id"] for stream in listed["streams"]] == ["s"]  # no "planted"
