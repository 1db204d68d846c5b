"""What `InMemoryRunnel` adds around the application: a reader that leaves is a disconnect
the application sees, and a closed node behaves as a server that went away."""

from __future__ import annotations

import asyncio

import httpx
import pytest
from httpx_sse import aconnect_sse
from runnel_client import RunnelError

from entrypoints.testing import InMemoryRunnel
from tests.http.support import GUARD_SECONDS

DEFINITION = {"stream_id": "s", "content_class": "output.text"}


async def test_a_reader_that_leaves_frees_its_subscription_slot() -> None:
    async with InMemoryRunnel(max_subscriptions_per_principal=1) as node, \
            node.async_client() as runnel:
        await runnel.create_stream("r", DEFINITION)
        await runnel.append("r", "s", [{"payload": 1}])
        first = runnel.follow("r", "s")
        assert (await anext(first)).sequence == 1
        with pytest.raises(RunnelError) as second:
            await anext(runnel.follow("r", "s"))
        assert (second.value.status, second.value.code) == (429, "too_many_subscriptions")
        await first.aclose()  # the reader leaves: its slot is free again
        async with asyncio.timeout(GUARD_SECONDS):
            while True:
                try:
                    assert (await anext(runnel.follow("r", "s"))).sequence == 1
                    break
                except RunnelError as refused:
                    assert refused.code == "too_many_subscriptions"
                    await asyncio.sleep(0.05)  # the slot is released as the request ends


async def test_a_closed_node_cuts_its_readers_and_refuses_connections() -> None:
    node = InMemoryRunnel()
    async with node.async_client() as runnel, node.async_http(node.token()) as http:
        await runnel.create_stream("r", DEFINITION)
        await runnel.append("r", "s", [{"payload": 1}])
        async with aconnect_sse(http, "GET", "/api/workflow-streams/runs/r/streams/s/subscribe"
                                ) as source:
            events = source.aiter_sse()
            assert (await anext(events)).event == "record"
            await asyncio.to_thread(node.close)
            with pytest.raises(httpx.RemoteProtocolError):
                async with asyncio.timeout(GUARD_SECONDS):
                    async for _ in events:
                        pass
        with pytest.raises(httpx.ConnectError):
            await runnel.read("r", "s")
    with node.http() as sync_http, pytest.raises(httpx.ConnectError):
        sync_http.get("/healthz")


def test_one_node_serves_callers_on_several_loops_and_threads() -> None:
    with InMemoryRunnel() as node:
        with node.client() as runnel:
            runnel.create_stream("r", DEFINITION)

        async def append(n: int) -> list[int]:
            async with node.async_client() as client:
                return list((await client.append("r", "s", [{"payload": n}]))["sequences"])

        assert asyncio.run(append(1)) == [1]
        assert asyncio.run(append(2)) == [2]  # another loop, the same node
        with node.client() as runnel:
            assert runnel.read("r", "s").head == 2
