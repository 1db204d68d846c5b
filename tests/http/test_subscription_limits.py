"""Concurrent subscriptions are capped per principal, and a disconnect frees its slot."""

from __future__ import annotations

import asyncio

import httpx

from tests.http.server import RunnelServer, bearer, token
from tests.http.support import (
    GUARD_SECONDS,
    append,
    assert_problem,
    create_stream,
    has_event,
    read_events,
    wait_for_metric,
)

SERVER_ENV = {"RUNNEL_MAX_SUBSCRIPTIONS_PER_PRINCIPAL": "2"}


async def test_a_third_concurrent_subscription_is_429_until_one_disconnects(
        api: httpx.AsyncClient, server: RunnelServer, run_id: str) -> None:
    await create_stream(api, run_id, "open")
    await create_stream(api, run_id, "done")
    await append(api, run_id, "done", [1])
    await api.post(f"/runs/{run_id}/streams/done/close")
    url = f"/runs/{run_id}/streams/open/subscribe"

    async with api.stream("GET", url) as first, api.stream("GET", url) as second:
        assert (first.status_code, second.status_code) == (200, 200)
        assert await wait_for_metric(server.url, "runnel_sse_readers", lambda v: v == 2) == 2
        third = await api.get(url)
        assert_problem(third, 429, "too_many_subscriptions")
        assert int(third.headers["retry-after"]) >= 1
        # The cap is per principal: bob is not affected.
        bobs = await read_events(api, f"/runs/{run_id}/streams/done/subscribe",
                                 headers=bearer(token(sub="bob")), until=has_event("end"))
        assert bobs[-1].event == "end"

    # Both clients went away: the server notices, releases everything, and accepts again.
    await wait_for_metric(server.url, "runnel_sse_readers", lambda v: v == 0)
    events = await read_events(api, f"/runs/{run_id}/streams/done/subscribe",
                               until=has_event("end"))
    assert [e.event for e in events] == ["record", "end"]


async def test_the_run_subscription_counts_one_against_the_cap(
        api: httpx.AsyncClient, server: RunnelServer, run_id: str) -> None:
    carol = bearer(token(sub="carol"))
    for stream_id in ("a", "b", "c"):
        await create_stream(api, run_id, stream_id)
    run_url = f"/runs/{run_id}/subscribe"
    before = await wait_for_metric(server.url, "runnel_sse_readers", lambda v: v >= 0)
    async with api.stream("GET", run_url, headers=carol) as run_follow, \
            api.stream("GET", f"/runs/{run_id}/streams/a/subscribe", headers=carol) as single:
        assert (run_follow.status_code, single.status_code) == (200, 200)
        await wait_for_metric(server.url, "runnel_sse_readers", lambda v: v >= before + 2)
        assert_problem(await api.get(run_url, headers=carol), 429, "too_many_subscriptions")
    # Both went away: their slots come back once the server notices (at its next frame).
    async with asyncio.timeout(GUARD_SECONDS):
        while True:
            async with api.stream("GET", run_url, headers=carol) as again:
                if again.status_code == 200:
                    break
                await again.aread()
                assert_problem(again, 429, "too_many_subscriptions")
            await asyncio.sleep(0.1)


async def test_a_facade_event_stream_counts_as_a_reader_until_it_goes(
        server: RunnelServer, run_id: str) -> None:
    dave = bearer(token(sub="dave"))
    async with httpx.AsyncClient(base_url=server.url, headers=dave, timeout=30) as face:
        path = f"/v1/stream/{run_id}"
        created = await face.put(path, headers={"content-type": "application/json"})
        assert created.status_code == 201, created.text
        before = await wait_for_metric(server.url, "runnel_sse_readers", lambda v: v >= 0)
        async with face.stream("GET", path, params={"offset": "-1", "live": "sse"}) as first, \
                face.stream("GET", path, params={"offset": "-1", "live": "sse"}) as second:
            assert (first.status_code, second.status_code) == (200, 200)
            await wait_for_metric(server.url, "runnel_sse_readers",
                                  lambda v: v >= before + 2)
            # The gauge and the cap count the same connections (two slots here).
            assert_problem(await face.get(path, params={"offset": "-1", "live": "sse"}),
                           429, "too_many_subscriptions")
        # Gone once the server notices (at once here: the facade says upToDate at open,
        # and the next write finds the socket closed at the latest).
        await face.post(path, content=b'{"n": 1}', headers={"content-type": "application/json"})
        await wait_for_metric(server.url, "runnel_sse_readers", lambda v: v <= before)
