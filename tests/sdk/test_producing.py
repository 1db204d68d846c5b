"""Producing with the SDK against a real server: append honours 429 `Retry-After` with
bounded retries; `LivePublisher` sends bursts as one request and never blocks."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
import pytest
from runnel_client import AsyncRunnelClient, BackpressureError, LiveEvent, LivePublisher, Record

from tests.http.server import RunnelServer, bearer, token
from tests.http.support import GUARD_SECONDS
from tests.sdk.support import Collector

TIGHT = {"stream_id": "s", "content_class": "output.text", "consumers": ["ui"],
         "credit": {"max_unread_items": 2, "on_unread_full": "reject"}}


def counting_client(server: RunnelServer, statuses: list[int],
                    on_429: asyncio.Event | None = None) -> httpx.AsyncClient:
    async def seen(response: httpx.Response) -> None:
        statuses.append(response.status_code)
        if response.status_code == 429 and on_429 is not None:
            on_429.set()

    return httpx.AsyncClient(base_url=server.url, timeout=30,
                             event_hooks={"response": [seen]})


async def test_append_waits_out_backpressure_once_credit_is_freed(server: RunnelServer,
                                                                  run_id: str) -> None:
    statuses: list[int] = []
    refused = asyncio.Event()
    async with AsyncRunnelClient(server.url, token(), max_backpressure_retries=3,
                                 http=counting_client(server, statuses, refused)) as client, \
            httpx.AsyncClient(base_url=server.api, headers=bearer(token())) as other:
        await client.create_stream(run_id, TIGHT)
        await client.append(run_id, "s", [{"payload": 1}, {"payload": 2}])

        async def ack_after_refusal() -> None:
            await refused.wait()  # the client is now sleeping for Retry-After
            response = await other.post(f"/runs/{run_id}/streams/s/consumers/ui/ack",
                                        json={"sequence": 2})
            assert response.status_code == 200, response.text

        async with asyncio.timeout(GUARD_SECONDS):
            acker = asyncio.create_task(ack_after_refusal())
            result = await client.append(run_id, "s", [{"payload": 3}])
            await acker
    assert result["sequences"] == [3]
    assert statuses[-2:] == [429, 201]


async def test_append_gives_up_after_its_bounded_retries(server: RunnelServer,
                                                         run_id: str) -> None:
    statuses: list[int] = []
    async with AsyncRunnelClient(server.url, token(), max_backpressure_retries=1,
                                 http=counting_client(server, statuses)) as client:
        await client.create_stream(run_id, TIGHT)
        await client.append(run_id, "s", [{"payload": 1}, {"payload": 2}])
        statuses.clear()
        with pytest.raises(BackpressureError) as raised:
            await client.append(run_id, "s", [{"payload": 3}])
    assert statuses == [429, 429]
    assert raised.value.code == "backpressure"
    assert raised.value.retry_after >= 1


async def test_the_publisher_sends_bursts_and_every_chunk_reaches_a_live_reader(
        server: RunnelServer, run_id: str) -> None:
    async with AsyncRunnelClient(server.url, token()) as client:
        await client.create_stream(run_id, {"stream_id": "s", "content_class": "output.text"})
        await client.append(run_id, "s", [{"payload": "start"}])
        reader = Collector(client.follow(run_id, "s", live=True))
        try:
            await reader.wait_for(lambda items: len(items) >= 1)  # subscribed
            async with LivePublisher(client, run_id, "s", source="model_turn",
                                     attempt=1) as publisher:
                accepted = [publisher.publish(f"tok{n}") for n in range(100)]
            items = await reader.wait_for(lambda items: len(items) >= 101)
        finally:
            await reader.stop()
    assert all(accepted)
    assert (publisher.sent, publisher.dropped, publisher.failed) == (100, 0, 0)
    assert 1 <= publisher.requests < 100
    chunks = [item.data for item in items if isinstance(item, LiveEvent)]
    assert [chunk["data"] for chunk in chunks] == [f"tok{n}" for n in range(100)]
    assert [chunk["index"] for chunk in chunks] == list(range(100))
    assert {(chunk["source"], chunk["attempt"]) for chunk in chunks} == {("model_turn", 1)}
    assert isinstance(items[0], Record)


class SlowSink:
    """A sink that holds every request until the test lets it go."""

    def __init__(self) -> None:
        self.release = asyncio.Event()
        self.bursts: list[list[Any]] = []

    async def publish_live(self, run_id: str, stream_id: str, chunks: list[Any],
                           source: str | None = None, attempt: int | None = None,
                           index: int | None = None) -> Any:
        self.bursts.append(list(chunks))
        await self.release.wait()
        return {"accepted": len(chunks)}


class FailingSink:
    async def publish_live(self, *args: Any, **kwargs: Any) -> Any:
        raise httpx.ConnectError("down")


async def test_a_full_queue_drops_and_counts_and_publish_never_blocks() -> None:
    sink = SlowSink()
    publisher = LivePublisher(sink, "r", "s", queue_limit=4)
    publisher.start()
    publisher.publish("first")
    async with asyncio.timeout(GUARD_SECONDS):
        while not sink.bursts:  # the first burst is in flight, held by the sink
            await asyncio.sleep(0)
    results = [publisher.publish(n) for n in range(10)]  # no await: publish is synchronous
    assert results == [True] * 4 + [False] * 6
    assert publisher.dropped == 6
    sink.release.set()
    async with asyncio.timeout(GUARD_SECONDS):
        await publisher.aclose()
    assert sink.bursts == [["first"], [0, 1, 2, 3]]
    assert (publisher.sent, publisher.requests, publisher.failed) == (5, 2, 0)


async def test_failed_sends_are_counted_never_raised() -> None:
    async with LivePublisher(FailingSink(), "r", "s") as publisher:
        publisher.publish("a")
        publisher.publish("b")
    assert (publisher.failed, publisher.sent, publisher.dropped) == (2, 0, 0)
