"""`runnel_client.starlette.follow_response`: a real Starlette app under uvicorn, in front of a
real Runnel server, proxies a follow to a "browser" that holds no Runnel token; the browser
resumes with `Last-Event-ID` (or `?after=`, which wins) and gets Runnel's own frames."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx
import pytest_asyncio
import uvicorn
from httpx_sse import aconnect_sse
from runnel_client import AsyncRunnelClient
from runnel_client.starlette import follow_response
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from entrypoints.testing import InMemoryRunnel
from tests.http.server import RunnelServer, token
from tests.http.support import GUARD_SECONDS, append, create_stream


@asynccontextmanager
async def serving_proxy(runnel: AsyncRunnelClient) -> AsyncIterator[str]:
    """A Starlette app under uvicorn whose route follows a stream with `runnel`'s token."""

    async def events(request: Request) -> Response:
        return await follow_response(runnel, request, request.path_params["run_id"],
                                     request.path_params["stream_id"], live=True,
                                     keepalive_seconds=1)

    app = Starlette(routes=[Route("/events/{run_id}/{stream_id}", events)])
    web = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning",
                                        lifespan="off"))
    serving = asyncio.create_task(web.serve())
    try:
        async with asyncio.timeout(GUARD_SECONDS):
            while not web.started:
                await asyncio.sleep(0.02)
        port = web.servers[0].sockets[0].getsockname()[1]
        yield f"http://127.0.0.1:{port}"
    finally:
        web.should_exit = True
        await serving


@pytest_asyncio.fixture
async def proxy(server: RunnelServer) -> AsyncIterator[str]:
    async with AsyncRunnelClient(server.url, token()) as runnel, \
            serving_proxy(runnel) as url:
        yield url


async def frames(url: str, *, headers: dict[str, str] | None = None,
                 records: int = 1000, on_open: Any = None) -> list[tuple[str, Any]]:
    """What a browser holding no token gets, until `end` or `records` record frames."""
    got: list[tuple[str, Any]] = []
    async with httpx.AsyncClient(timeout=30) as browser, asyncio.timeout(GUARD_SECONDS), \
            aconnect_sse(browser, "GET", url, headers=dict(headers or {})) as source:
        assert source.response.status_code == 200, await source.response.aread()
        assert source.response.headers["content-type"].startswith("text/event-stream")
        assert "authorization" not in source.response.request.headers
        if on_open is not None:
            await on_open()
        async for event in source.aiter_sse():
            if not event.data:
                continue  # a `: ping` (httpx-sse yields it after an event with an id)
            got.append((event.event, (event.id, json.loads(event.data))))
            if event.event == "end" or sum(kind == "record" for kind, _ in got) >= records:
                break
    return got


async def test_a_browser_follows_and_resumes_through_the_proxy(
        proxy: str, api: httpx.AsyncClient, run_id: str) -> None:
    await create_stream(api, run_id)
    await append(api, run_id, "s", ["one", "two", "three"])
    url = f"{proxy}/events/{run_id}/s"

    first = await frames(url, records=2)
    assert [(kind, seq) for kind, (seq, _) in first] == [("record", "1"), ("record", "2")]
    page = (await api.get(f"/runs/{run_id}/streams/s/records")).json()["records"]
    assert [body for _, (_, body) in first] == page[:2]  # Runnel's envelope, as read

    async def more() -> None:
        await append(api, run_id, "s", ["four"])
        await api.post(f"/runs/{run_id}/streams/s/close")

    resumed = await frames(url, headers={"Last-Event-ID": "2"}, on_open=more)
    assert [(kind, seq) for kind, (seq, _) in resumed[:-1]] == [("record", "3"),
                                                                ("record", "4")]
    assert resumed[-1] == ("end", ("4", {"reason": "closed", "last_sequence": 4}))
    query = await frames(url + "?after=3", headers={"Last-Event-ID": "1"})
    assert [kind for kind, _ in query] == ["record", "end"]
    assert query[0][1][1]["payload"] == "four"


async def test_live_chunks_pass_through_the_proxy(proxy: str, api: httpx.AsyncClient,
                                                  run_id: str) -> None:
    await create_stream(api, run_id)
    await append(api, run_id, "s", ["start"])

    async def publish() -> None:
        # The follow is registered once its first record came; a chunk before could be lost.
        response = await api.post(f"/runs/{run_id}/streams/s/live",
                                  json={"chunks": ["hel", "lo"], "source": "turn"})
        assert response.status_code == 202, response.text

    url = f"{proxy}/events/{run_id}/s"
    async with httpx.AsyncClient(timeout=30) as browser, asyncio.timeout(GUARD_SECONDS), \
            aconnect_sse(browser, "GET", url) as source:
        got: list[tuple[str, Any]] = []
        async for event in source.aiter_sse():
            if not event.data:
                continue  # a `: ping` (httpx-sse yields it after an event with an id)
            got.append((event.event, json.loads(event.data)))
            if event.event == "record" and len(got) == 1:
                await publish()
            if len([kind for kind, _ in got if kind == "live"]) >= 2:
                break
    live = [body for kind, body in got if kind == "live"]
    assert [(chunk["data"], chunk["source"]) for chunk in live] == [("hel", "turn"),
                                                                   ("lo", "turn")]


async def test_the_proxy_refuses_a_bad_cursor_and_an_unknown_stream(
        proxy: str, api: httpx.AsyncClient, run_id: str) -> None:
    await create_stream(api, run_id)
    async with httpx.AsyncClient(timeout=30) as browser:
        for headers in ({"Last-Event-ID": "x"}, {"Last-Event-ID": "-1"},
                        {"Last-Event-ID": "1" * 40}):
            response = await browser.get(f"{proxy}/events/{run_id}/s", headers=headers)
            assert response.status_code == 400, (headers, response.text)
        missing = await browser.get(f"{proxy}/events/{run_id}/ghost")
        assert missing.status_code == 404
        assert missing.headers["content-type"].startswith("application/problem+json")
        assert missing.json()["code"] == "not_found"


async def test_a_browser_that_leaves_ends_the_proxys_subscription() -> None:
    """One subscription per principal: the browser's second visit is served only if the
    proxy's subscription of its first visit ended when the browser left."""
    async with InMemoryRunnel(max_subscriptions_per_principal=1) as node, \
            node.async_client() as runnel, serving_proxy(runnel) as proxy:
        await runnel.create_stream("r", {"stream_id": "s", "content_class": "output.text"})
        await runnel.append("r", "s", [{"payload": 1}])
        url = f"{proxy}/events/r/s"
        assert [kind for kind, _ in await frames(url, records=1)] == ["record"]
        async with asyncio.timeout(GUARD_SECONDS):
            while True:  # the slot is released as the proxied request ends
                again = await frames(url, records=1)
                if again[0][0] == "record":
                    break
                assert again == [("end", ("", {"reason": "error",
                                               "code": "too_many_subscriptions"}))]
                await asyncio.sleep(0.05)
