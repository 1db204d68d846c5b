"""`InMemoryRunnel`: the promises producer code relies on, without a server."""

from __future__ import annotations

import asyncio

import pytest
from runnel_client import InMemoryRunnel, LiveEvent, LivePublisher, Record, RunnelError

from tests.sdk.support import Collector

DEFINITION = {"stream_id": "s", "content_class": "output.text"}


@pytest.fixture
async def runnel() -> InMemoryRunnel:
    fake = InMemoryRunnel()
    await fake.create_stream("r", DEFINITION)
    return fake


async def test_sequences_are_dense_and_idempotency_keys_return_the_original(
        runnel: InMemoryRunnel) -> None:
    first = await runnel.append("r", "s", [{"payload": "a", "idempotency_key": "k1"},
                                           {"payload": "b"}])
    again = await runnel.append("r", "s", [{"payload": "a", "idempotency_key": "k1"},
                                           {"payload": "c", "idempotency_key": "k2"}])
    assert (first, again) == ({"sequences": [1, 2], "head": 2},
                              {"sequences": [1, 3], "head": 3})
    assert [r.payload for r in runnel.records("r", "s")] == ["a", "b", "c"]
    page = await runnel.read("r", "s", after=1, limit=1)
    assert [record["sequence"] for record in page["records"]] == [2]
    assert page["next_cursor"] == 2
    with pytest.raises(RunnelError) as future:
        await runnel.read("r", "s", after=9)
    assert future.value.code == "future_cursor"


async def test_bad_batches_and_closed_streams_are_refused(runnel: InMemoryRunnel) -> None:
    for batch in ([], [{"payload": 1, "data": "AA=="}], [{}]):
        with pytest.raises(RunnelError) as refused:
            await runnel.append("r", "s", batch)
        assert refused.value.status == 422
    await runnel.close_stream("r", "s")
    with pytest.raises(RunnelError) as closed:
        await runnel.append("r", "s", [{"payload": 1}])
    assert (closed.value.status, closed.value.code) == (409, "stream_closed")
    with pytest.raises(RunnelError) as missing:
        await runnel.append("r", "ghost", [{"payload": 1}])
    assert missing.value.status == 404


async def test_acks_only_advance(runnel: InMemoryRunnel) -> None:
    await runnel.append("r", "s", [{"payload": 1}, {"payload": 2}])
    await runnel.ack("r", "s", "ui", 2)
    with pytest.raises(RunnelError) as regression:
        await runnel.ack("r", "s", "ui", 1)
    assert regression.value.code == "ack_regression"


async def test_followers_see_every_record_once_and_end_after_close(
        runnel: InMemoryRunnel) -> None:
    await runnel.append("r", "s", [{"payload": 1}])
    followers = [Collector(runnel.follow("r", "s")) for _ in range(3)]
    late = Collector(runnel.follow("r", "s", after=1))
    await asyncio.gather(*(f.wait_for(lambda items: len(items) >= 1) for f in followers))
    for n in range(2, 6):
        await runnel.append("r", "s", [{"payload": n}])
    await runnel.close_stream("r", "s")
    for follower in [*followers, late]:
        items = await follower.finished()
        assert all(isinstance(item, Record) for item in items)
    assert [[item.sequence for item in f.items] for f in followers] == [[1, 2, 3, 4, 5]] * 3
    assert [item.sequence for item in late.items] == [2, 3, 4, 5]


async def test_live_chunks_reach_live_followers_only(runnel: InMemoryRunnel) -> None:
    await runnel.publish_live("r", "s", ["before anyone follows"])
    live = Collector(runnel.follow("r", "s", live=True))
    plain = Collector(runnel.follow("r", "s"))
    await asyncio.sleep(0)  # both are following
    async with LivePublisher(runnel, "r", "s", source="m", attempt=2) as publisher:
        publisher.publish("x")
        publisher.publish("y")
    await runnel.append("r", "s", [{"payload": "end"}])
    await runnel.close_stream("r", "s")
    live_items = await live.finished()
    chunks = [item.data for item in live_items if isinstance(item, LiveEvent)]
    assert [(c["data"], c["source"], c["attempt"], c["index"]) for c in chunks] == [
        ("x", "m", 2, 0), ("y", "m", 2, 1)]
    assert [type(item) for item in await plain.finished()] == [Record]


async def test_a_best_effort_stream_stores_nothing(runnel: InMemoryRunnel) -> None:
    await runnel.create_stream("r", {**DEFINITION, "stream_id": "be", "mode": "best_effort"})
    follower = Collector(runnel.follow("r", "be"))
    await asyncio.sleep(0)
    assert await runnel.append("r", "be", [{"payload": 1}, {"payload": 2}]) == {"accepted": 2}
    items = await follower.wait_for(lambda items: len(items) >= 2)
    await follower.stop()
    assert [item.data["data"] for item in items if isinstance(item, LiveEvent)] == [1, 2]
    assert runnel.records("r", "be") == []
