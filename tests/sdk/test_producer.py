"""The SDK's `Producer` against a real server: keys from a prefix and a counter that make a
restart safe, linger batching within the server's batch and size rules, retries of lost
answers, 5xx, transport errors and 429 that store each record once, one error when it gives
up, flush on close, and `pipe()` turning a token stream into both layers."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
from runnel_client import (
    AppendFailed,
    AsyncRunnelClient,
    LiveEvent,
    LiveText,
    Record,
    RetryPolicy,
    RunnelError,
)
from runnel_client.batching import BatchLimits

from tests.http.server import RunnelServer, bearer, token
from tests.http.support import GUARD_SECONDS
from tests.sdk.hostile import Flaky
from tests.sdk.support import Collector

FAST = RetryPolicy(max_attempts=4, base_seconds=0.01, max_seconds=0.05)
HOLD = 3600.0  # a linger that never ends in a test: only flush/close/size send


def client(server: RunnelServer, transport: Flaky) -> AsyncRunnelClient:
    return AsyncRunnelClient(server.url, token(), http=httpx.AsyncClient(
        base_url=server.url, transport=transport, timeout=30))


async def stored(rn: AsyncRunnelClient, run_id: str) -> list[Record]:
    page = await rn.read(run_id, "s", limit=1000)
    return page.records


async def made(rn: AsyncRunnelClient, run_id: str, **definition: Any) -> None:
    await rn.create_stream(run_id, {"stream_id": "s", "content_class": "output.text",
                                    **definition})


async def test_keys_are_prefix_and_counter_and_a_restarted_producer_stores_nothing_twice(
        server: RunnelServer, run_id: str) -> None:
    async with AsyncRunnelClient(server.url, token()) as rn:
        await made(rn, run_id)
        async with rn.stream(run_id, "s").producer(key_prefix="job-1/answer") as first:
            keys = [await first.write({"n": n}) for n in range(3)]
        # A restart: the same work again with the same prefix, then two records more.
        async with rn.stream(run_id, "s").producer(key_prefix="job-1/answer") as again:
            for n in range(5):
                await again.write({"n": n})
        records = await stored(rn, run_id)
    assert keys == ["job-1/answer:0", "job-1/answer:1", "job-1/answer:2"]
    assert [r.payload for r in records] == [{"n": n} for n in range(5)]
    assert [r.idempotency_key for r in records] == [f"job-1/answer:{n}" for n in range(5)]
    assert (first.stored, again.stored, again.head) == (3, 5, 5)


async def test_writes_wait_for_the_linger_and_go_out_as_one_append(
        server: RunnelServer, run_id: str) -> None:
    transport = Flaky()
    async with client(server, transport) as rn:
        await made(rn, run_id)
        writer = rn.producer(run_id, "s", key_prefix="p", linger_seconds=HOLD)
        for n in range(50):
            await writer.write(n)
        assert transport.batches == [] and await stored(rn, run_id) == []
        await writer.flush()
        assert transport.batches == [50]
        await writer.close()
        assert [r.payload for r in await stored(rn, run_id)] == list(range(50))


async def test_a_short_linger_sends_without_a_flush(server: RunnelServer, run_id: str) -> None:
    async with AsyncRunnelClient(server.url, token()) as rn:
        await made(rn, run_id)
        writer = rn.producer(run_id, "s", key_prefix="p", linger_seconds=0.01)
        await writer.write("alone")
        async with asyncio.timeout(GUARD_SECONDS):
            while not await stored(rn, run_id):
                await asyncio.sleep(0.05)
        await writer.close()
        assert [r.payload for r in await stored(rn, run_id)] == ["alone"]


async def test_a_write_while_a_batch_is_in_flight_goes_in_the_next_one(
        server: RunnelServer, run_id: str) -> None:
    gate = asyncio.Event()
    transport = Flaky(gate=gate)
    async with client(server, transport) as rn:
        await made(rn, run_id)
        writer = rn.producer(run_id, "s", key_prefix="race", linger_seconds=0.01)
        await writer.write("a")
        async with asyncio.timeout(GUARD_SECONDS):
            await transport.arrived.wait()  # the linger's append of "a" is held in flight
        second = asyncio.create_task(writer.write("b"))
        await asyncio.sleep(0.05)
        gate.set()
        async with asyncio.timeout(GUARD_SECONDS):
            await second
            await writer.close()
        assert [r.payload for r in await stored(rn, run_id)] == ["a", "b"]
    assert transport.batches == [1, 1]


async def test_batches_split_at_1000_records_and_at_the_byte_limit(
        server: RunnelServer, run_id: str) -> None:
    transport = Flaky()
    async with client(server, transport) as rn:
        await made(rn, run_id, credit={"max_total_items": 100_000})
        async with rn.producer(run_id, "s", key_prefix="many", linger_seconds=HOLD) as writer:
            for n in range(2500):
                await writer.write(n)
        assert transport.batches == [1000, 1000, 500]
        transport.batches.clear()
        async with rn.producer(run_id, "s", key_prefix="big", linger_seconds=HOLD,
                               max_batch_bytes=20_000) as writer:
            for _ in range(10):
                await writer.write("x" * 5000)
        assert transport.batches == [3, 3, 3, 1]
        assert max(transport.bodies[-4:]) <= 20_000
        assert len(await stored(rn, run_id)) == 1000  # read pages hold 1000 at most


def test_a_stream_with_consumers_bounds_batches_by_its_unread_ceilings() -> None:
    gated = {"consumers": ["ui"], "credit": {"max_unread_items": 4, "max_unread_bytes": 900}}
    assert BatchLimits.for_stream(gated) == BatchLimits(4, 900)
    assert BatchLimits.for_stream({**gated, "consumers": []}) == BatchLimits(1000, 4 * 2**20)


async def test_lost_answers_5xx_and_refused_connections_are_retried_and_stored_once(
        server: RunnelServer, run_id: str) -> None:
    transport = Flaky(refuse=1, unavailable=1, lose=2)
    async with client(server, transport) as rn:
        await made(rn, run_id)
        async with rn.producer(run_id, "s", key_prefix="k", linger_seconds=HOLD,
                               retry=RetryPolicy(max_attempts=6, base_seconds=0.01,
                                                 max_seconds=0.05)) as writer:
            for n in range(3):
                await writer.write(n)
        records = await stored(rn, run_id)
    assert [r.payload for r in records] == [0, 1, 2]  # once each, sent thrice
    assert transport.batches == [3, 3, 3]  # two answers lost, the third came back
    assert (transport.attempts, writer.retries) == (5, 4)


async def test_backpressure_waits_for_retry_after_then_succeeds(server: RunnelServer,
                                                                run_id: str) -> None:
    statuses: list[int] = []
    refused = asyncio.Event()

    async def seen(response: httpx.Response) -> None:
        statuses.append(response.status_code)
        if response.status_code == 429:
            refused.set()

    http = httpx.AsyncClient(base_url=server.url, event_hooks={"response": [seen]})
    async with AsyncRunnelClient(server.url, token(), http=http) as rn, \
            httpx.AsyncClient(base_url=server.api, headers=bearer(token())) as other:
        await made(rn, run_id, consumers=["ui"],
                   credit={"max_unread_items": 2, "on_unread_full": "reject"})
        writer = rn.producer(run_id, "s", key_prefix="bp", linger_seconds=HOLD,
                             retry=RetryPolicy(max_attempts=3, base_seconds=0.01))
        await writer.write(1)
        await writer.write(2)
        await writer.flush()

        async def ack_after_refusal() -> None:
            await refused.wait()
            answer = await other.post(f"/runs/{run_id}/streams/s/consumers/ui/ack",
                                      json={"sequence": 2})
            assert answer.status_code == 200, answer.text

        async with asyncio.timeout(GUARD_SECONDS):
            acker = asyncio.create_task(ack_after_refusal())
            await writer.write(3)
            await writer.close()
            await acker
        assert [r.payload for r in await stored(rn, run_id)] == [1, 2, 3]
    appends = [status for status in statuses if status in (201, 429)]
    assert appends[-2:] == [429, 201] and writer.retries == 1


async def test_it_gives_up_with_one_error_and_refuses_later_writes(server: RunnelServer,
                                                                   run_id: str) -> None:
    transport = Flaky(refuse=100)
    async with client(server, transport) as rn:
        await made(rn, run_id)
        writer = rn.producer(run_id, "s", key_prefix="gone", linger_seconds=HOLD, retry=FAST)
        await writer.write("a")
        await writer.write("b")
        with pytest.raises(AppendFailed) as failed:
            await writer.flush()
        with pytest.raises(AppendFailed):
            await writer.write("c")
    assert (failed.value.attempts, failed.value.code, failed.value.status) == (
        4, "transport_error", 0)
    assert [r["idempotency_key"] for r in failed.value.records] == ["gone:0", "gone:1"]
    assert isinstance(failed.value.__cause__, httpx.ConnectError)
    assert transport.attempts == 4


async def test_a_refusal_no_retry_can_change_fails_at_once(server: RunnelServer,
                                                           run_id: str) -> None:
    transport = Flaky()
    async with client(server, transport) as rn:
        await made(rn, run_id)
        await rn.close_stream(run_id, "s")
        writer = rn.producer(run_id, "s", key_prefix="late", linger_seconds=0, retry=FAST)
        with pytest.raises(AppendFailed) as failed:
            await writer.write("too late")
    assert (failed.value.status, failed.value.code, failed.value.attempts) == (
        409, "stream_closed", 1)
    assert transport.attempts == 1


async def test_an_oversize_record_is_refused_before_anything_is_sent(
        server: RunnelServer, run_id: str) -> None:
    transport = Flaky()
    async with client(server, transport) as rn:
        await made(rn, run_id)
        async with rn.producer(run_id, "s", key_prefix="big", linger_seconds=HOLD) as writer:
            with pytest.raises(RunnelError) as refused:
                await writer.write("x" * 70_000)
            assert writer.next_key == "big:0"  # the refused record took no number
            await writer.write("fits")
    assert (refused.value.status, refused.value.code) == (413, "too_large")
    assert "upload_object" in refused.value.problem["detail"]
    assert transport.batches == [1]


async def tokens(count: int) -> AsyncIterator[str]:
    for n in range(count):
        yield f"t{n} "
        await asyncio.sleep(0)


async def test_pipe_makes_live_chunks_and_a_durable_record_per_n_tokens(
        server: RunnelServer, run_id: str) -> None:
    async with AsyncRunnelClient(server.url, token()) as rn:
        await made(rn, run_id)
        await rn.append(run_id, "s", [{"payload": "start"}])
        reader = Collector(rn.follow(run_id, "s", live=True))
        try:
            await reader.wait_for(lambda items: len(items) >= 1)  # subscribed
            async with rn.stream(run_id, "s").producer(key_prefix="turn") as writer:
                keys = await writer.pipe(tokens(10), live=True, every=4)
            await rn.close_stream(run_id, "s")
            items = await reader.finished()
        finally:
            await reader.stop()
    records = [item for item in items if isinstance(item, Record)][1:]
    assert keys == ["turn:0", "turn:1", "turn:2"]
    assert [(r.step, r.payload) for r in records] == [
        ("turn:0", "t0 t1 t2 t3 "), ("turn:1", "t4 t5 t6 t7 "), ("turn:2", "t8 t9 ")]
    live = [item for item in items if isinstance(item, LiveEvent)]
    assert {event.source for event in live} <= set(keys)
    assert all(event.chunk in {f"t{n} " for n in range(10)} for event in live)
    text = LiveText()
    for item in items:
        text.apply(item)
    assert text.sources() == []  # every step's record replaced its preview


async def test_pipe_without_live_writes_one_record_for_the_whole_stream(
        server: RunnelServer, run_id: str) -> None:
    async with AsyncRunnelClient(server.url, token()) as rn:
        await made(rn, run_id)
        async with rn.producer(run_id, "s", key_prefix="once") as writer:
            assert await writer.pipe(["a", "b", "c"], live=False) == ["once:0"]
            assert await writer.pipe([{"x": 1}, {"x": 2}], live=False) == ["once:1"]
        records = await stored(rn, run_id)
    assert [r.payload for r in records] == ["abc", [{"x": 1}, {"x": 2}]]
