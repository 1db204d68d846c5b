"""`follow()` options against a real server: a consumer's acked position as the start and
acks as it goes (a restarted follower loses nothing without a cursor file), waiting for a
stream that does not exist yet, starting at the tail, and the typed read page."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable

import httpx
import pytest
from runnel_client import AsyncRunnelClient, ReadPage, Record, RunnelClient, RunnelError
from runnel_client.following import Acker

from tests.http.server import RunnelServer, token
from tests.http.support import GUARD_SECONDS
from tests.sdk.support import Collector

GATED = {"stream_id": "s", "content_class": "output.text", "consumers": ["ui"]}


def watching(server: RunnelServer, seen: list[tuple[str, str, int]]) -> httpx.AsyncClient:
    async def hook(response: httpx.Response) -> None:
        seen.append((response.request.method, response.request.url.path, response.status_code))

    return httpx.AsyncClient(base_url=server.url, timeout=30, event_hooks={"response": [hook]})


async def until(condition: Callable[[], bool]) -> None:
    async with asyncio.timeout(GUARD_SECONDS):
        while not condition():
            await asyncio.sleep(0.02)


async def test_a_restarted_consumer_follower_goes_on_from_its_acks_losing_nothing(
        server: RunnelServer, run_id: str) -> None:
    async with AsyncRunnelClient(server.url, token()) as rn:
        stream = rn.stream(run_id, "s")
        await stream.create(GATED)
        await stream.append([{"payload": n} for n in range(1, 11)])
        first: list[int] = []
        async with contextlib.aclosing(stream.follow(consumer="ui", ack_every=3)) as records:
            async for record in records:
                first.append(record.sequence)
                if record.sequence == 7:
                    break  # the process dies while handling record 7
        assert (await stream.info())["status"]["consumers"]["ui"] == 6
        await stream.close()
        second = [record.sequence async for record in stream.follow(consumer="ui",
                                                                    ack_every=3)]
        assert (await stream.info())["status"]["consumers"]["ui"] == 10
    assert first == [1, 2, 3, 4, 5, 6, 7]
    assert second == [7, 8, 9, 10]  # 7 again: it was not done with it; nothing lost


async def test_an_undeclared_consumer_is_refused_before_following(server: RunnelServer,
                                                                  run_id: str) -> None:
    async with AsyncRunnelClient(server.url, token()) as rn:
        await rn.create_stream(run_id, GATED)
        with pytest.raises(RunnelError) as refused:
            async for _ in rn.follow(run_id, "s", consumer="nobody"):
                pass
    assert (refused.value.status, refused.value.code) == (404, "consumer_not_found")


async def test_wait_for_stream_follows_a_stream_created_later(server: RunnelServer,
                                                              run_id: str) -> None:
    seen: list[tuple[str, str, int]] = []
    async with AsyncRunnelClient(server.url, token(), http=watching(server, seen)) as rn:
        follower = Collector(rn.follow(run_id, "s", wait_for_stream=True))
        try:
            await until(lambda: any(status == 404 for _, _, status in seen))
            await rn.create_stream(run_id, GATED)
            await rn.append(run_id, "s", [{"payload": "first"}])
            await rn.close_stream(run_id, "s")
            items = await follower.finished()
        finally:
            await follower.stop()
    assert [item.payload for item in items if isinstance(item, Record)] == ["first"]


async def test_start_tail_skips_the_history(server: RunnelServer, run_id: str) -> None:
    seen: list[tuple[str, str, int]] = []
    async with AsyncRunnelClient(server.url, token(), http=watching(server, seen)) as rn:
        await rn.create_stream(run_id, GATED)
        await rn.append(run_id, "s", [{"payload": n} for n in range(1, 4)])
        seen.clear()
        follower = Collector(rn.follow(run_id, "s", start="tail"))
        try:
            await until(lambda: any(method == "GET" and path.endswith("/streams/s")
                                    for method, path, _ in seen))
            await rn.append(run_id, "s", [{"payload": 4}, {"payload": 5}])
            await rn.close_stream(run_id, "s")
            items = await follower.finished()
        finally:
            await follower.stop()
    assert [item.sequence for item in items if isinstance(item, Record)] == [4, 5]


def test_the_sync_follower_acks_its_consumer_and_a_second_one_starts_at_the_end(
        server: RunnelServer, run_id: str) -> None:
    with RunnelClient(server.url, token()) as rn:
        stream = rn.stream(run_id, "s")
        stream.create(GATED)
        stream.append([{"payload": n} for n in range(1, 6)])
        stream.close()
        assert [r.sequence for r in stream.follow(consumer="ui", ack_every=2)] == [1, 2, 3, 4, 5]
        assert stream.info()["status"]["consumers"]["ui"] == 5
        assert list(stream.follow(consumer="ui")) == []


async def test_read_returns_a_typed_page(server: RunnelServer, run_id: str) -> None:
    async with AsyncRunnelClient(server.url, token()) as rn:
        stream = rn.stream(run_id, "s")
        await stream.create(GATED)
        await stream.append([{"payload": n} for n in range(1, 6)])
        page = await stream.read(after=2, limit=2)
        rest = await stream.read(after=page.next_cursor)
    assert isinstance(page, ReadPage)
    assert [(r.sequence, r.payload) for r in page.records] == [(3, 3), (4, 4)]
    assert (page.next_cursor, page.head, page.earliest, page.closed) == (4, 5, 1, False)
    assert [r.sequence for r in rest.records] == [5] and rest.next_cursor == 5


def test_the_acker_acks_only_what_the_caller_is_done_with() -> None:
    acker = Acker(every=3, acked=10)
    due: list[int | None] = []
    for sequence in range(11, 17):
        due.append(acker.passed(sequence))
        if due[-1] is not None:
            acker.acked = sequence  # what a successful ack does
    assert due == [None, None, 13, None, None, 16]
    assert acker.final() is None
    assert acker.passed(17) is None
    assert acker.final() == 17
    with pytest.raises(ValueError):
        Acker(every=0, acked=0)
