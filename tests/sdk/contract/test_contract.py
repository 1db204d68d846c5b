"""What producer and reader code relies on, held against `InMemoryRunnel` and a real server
alike (`target` runs each test on both): the same answers, the same refusals, the same
shapes. A test that passes on one target only is a drift of the double."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from httpx_sse import aconnect_sse
from runnel_client import BackpressureError, LiveEvent, LivePublisher, Record, RunnelError

from tests.http.support import GUARD_SECONDS, assert_problem
from tests.sdk.contract.conftest import Target
from tests.sdk.support import Collector

DEFINITION = {"stream_id": "s", "content_class": "output.text", "consumers": ["ui"]}
RECORD_KEYS = {"sequence", "content_type", "appended_at", "payload"}


async def test_append_and_read_answer_with_the_servers_shapes(target: Target,
                                                              run_id: str) -> None:
    async with target.async_client() as runnel:
        created = await runnel.create_stream(run_id, DEFINITION)
        assert set(created) == {"run_id", "stream_id", "definition", "status", "created_at"}
        assert created["definition"]["credit"]["max_unread_items"] == 1000
        assert created["status"]["consumers"] == {"ui": 0}
        again = await runnel.create_stream(run_id, DEFINITION)
        assert again["definition"] == created["definition"]

        first = await runnel.append(run_id, "s", [{"payload": {"n": 1}, "idempotency_key": "k1"},
                                                  {"payload": "two"}])
        repeat = await runnel.append(run_id, "s", [{"payload": {"n": 1}, "idempotency_key": "k1"}])
        binary = await runnel.append(run_id, "s", [{"data": "AAE=",
                                                    "content_type": "application/x-bin"}])
        assert (first, repeat, binary) == ({"sequences": [1, 2], "head": 2, "duplicates": []},
                                           {"sequences": [1], "head": 2, "duplicates": [0]},
                                           {"sequences": [3], "head": 3, "duplicates": []})
        page = await runnel.read(run_id, "s", after=1, limit=1)
        assert (page.next_cursor, page.head, page.earliest, page.closed) == (2, 3, 1, False)
        [two] = page.records
        assert (two.sequence, two.payload, two.content_type) == (2, "two", "application/json")
        records = (await runnel.read(run_id, "s")).records
        assert records[0].idempotency_key == "k1"
        assert (records[2].data, records[2].content_type) == ("AAE=", "application/x-bin")
        with pytest.raises(RunnelError) as future:
            await runnel.read(run_id, "s", after=9)
        assert (future.value.status, future.value.code) == (400, "future_cursor")


async def test_a_follower_gets_every_record_once_in_order_and_ends_at_close(
        target: Target, run_id: str) -> None:
    async with target.async_client() as runnel:
        await runnel.create_stream(run_id, DEFINITION)
        await runnel.append(run_id, "s", [{"payload": 1}, {"payload": 2}])
        follower = Collector(runnel.follow(run_id, "s"))
        late = Collector(runnel.follow(run_id, "s", after=2))
        await follower.wait_for(lambda items: len(items) >= 2)
        for n in range(3, 8):
            await runnel.append(run_id, "s", [{"payload": n}])
        assert await runnel.close_stream(run_id, "s") == {"closed": True, "head": 7}
        items = await follower.finished()
        assert all(isinstance(item, Record) for item in items)
        assert [item.sequence for item in items] == list(range(1, 8))
        assert [item.payload for item in items] == list(range(1, 8))
        assert [item.sequence for item in await late.finished()] == list(range(3, 8))


async def _events(target: Target, path: str, *, headers: dict[str, str] | None = None,
                  params: dict[str, str] | None = None, until: int = 1000) -> list[Any]:
    """The frames of one subscription until it ends (or `until` record frames came)."""
    frames: list[Any] = []
    async with target.async_http() as http, asyncio.timeout(GUARD_SECONDS), aconnect_sse(
            http, "GET", path, headers=headers, params=params) as source:
        assert source.response.status_code == 200, await source.response.aread()
        assert source.response.headers["content-type"].startswith("text/event-stream")
        async for event in source.aiter_sse():
            if not event.data:
                continue  # a `: ping` (httpx-sse yields it after an event with an id)
            frames.append((event.event, event.id or None, json.loads(event.data)
                           if event.data else None))
            if event.event == "end" or sum(f[0] == "record" for f in frames) >= until:
                break
    return frames


async def test_a_subscription_resumes_from_last_event_id_and_ends_with_an_end_frame(
        target: Target, run_id: str) -> None:
    async with target.async_client() as runnel:
        await runnel.create_stream(run_id, DEFINITION)
        await runnel.append(run_id, "s", [{"payload": n} for n in range(1, 6)])
        path = f"/runs/{run_id}/streams/s/subscribe"
        resumed = await _events(target, path, headers={"Last-Event-ID": "3"}, until=2)
        assert [(kind, seq, body["sequence"]) for kind, seq, body in resumed] == [
            ("record", "4", 4), ("record", "5", 5)]
        # The query wins over the header.
        query = await _events(target, path, headers={"Last-Event-ID": "3"},
                              params={"after": "1"}, until=4)
        assert [seq for _, seq, _ in query] == ["2", "3", "4", "5"]
        await runnel.close_stream(run_id, "s")
        ended = await _events(target, path, headers={"Last-Event-ID": "4"})
        assert ended[0][:2] == ("record", "5")
        assert set(ended[0][2]) == RECORD_KEYS
        assert (ended[-1][0], ended[-1][2]) == ("end", {"reason": "closed",
                                                        "last_sequence": 5})


async def test_a_bad_last_event_id_is_refused(target: Target, run_id: str) -> None:
    async with target.async_client() as runnel, target.async_http() as http:
        await runnel.create_stream(run_id, DEFINITION)
        path = f"/runs/{run_id}/streams/s/subscribe"
        assert_problem(await http.get(path, headers={"Last-Event-ID": "x"}), 400,
                       "invalid_cursor")
        assert_problem(await http.get(path, params={"after": "9"}), 400, "future_cursor")


async def test_acks_only_advance_and_only_for_declared_consumers(target: Target,
                                                                 run_id: str) -> None:
    async with target.async_client() as runnel:
        await runnel.create_stream(run_id, DEFINITION)
        await runnel.append(run_id, "s", [{"payload": n} for n in range(3)])
        assert await runnel.ack(run_id, "s", "ui", 2) == {"consumer_id": "ui", "acked": 2}
        assert await runnel.ack(run_id, "s", "ui", 2) == {"consumer_id": "ui", "acked": 2}
        refusals = []
        for consumer, sequence in (("ui", 1), ("ui", 4), ("ghost", 1)):
            with pytest.raises(RunnelError) as refused:
                await runnel.ack(run_id, "s", consumer, sequence)
            refusals.append((refused.value.status, refused.value.code))
        assert refusals == [(409, "ack_regression"), (400, "ack_beyond_head"),
                            (404, "consumer_not_found")]
        status = (await runnel.get_stream(run_id, "s"))["status"]
        assert status["consumers"] == {"ui": 2}


async def test_credit_refuses_the_records_past_the_unread_ceiling(target: Target,
                                                                  run_id: str) -> None:
    async with target.async_client(max_backpressure_retries=0) as runnel:
        await runnel.create_stream(run_id, DEFINITION)  # 1,000 unread items for "ui"
        await runnel.append(run_id, "s", [{"payload": n} for n in range(1000)])
        with pytest.raises(BackpressureError) as full:
            await runnel.append(run_id, "s", [{"payload": n} for n in range(500)])
        assert (full.value.status, full.value.code) == (429, "backpressure")
        assert full.value.retry_after > 0
        assert (await runnel.read(run_id, "s", after=999)).head == 1000  # nothing stored
        await runnel.ack(run_id, "s", "ui", 500)
        appended = await runnel.append(run_id, "s", [{"payload": n} for n in range(500)])
        assert appended["sequences"] == list(range(1001, 1501))


async def test_an_oversize_payload_is_refused_and_names_its_ceiling(target: Target,
                                                                    run_id: str) -> None:
    async with target.async_client() as runnel, target.async_http() as http:
        await runnel.create_stream(run_id, DEFINITION)
        response = await http.post(f"/runs/{run_id}/streams/s/records",
                                   json={"records": [{"payload": "ok"},
                                                     {"payload": "x" * 70_000}]})
        assert_problem(response, 413, "too_large")
        with pytest.raises(RunnelError) as refused:
            await runnel.append(run_id, "s", [{"payload": "x" * 70_000}])
        assert (refused.value.status, refused.value.code) == (413, "too_large")
        assert (await runnel.read(run_id, "s")).head == 0  # the good record went too


async def test_a_misspelled_record_field_is_refused(target: Target, run_id: str) -> None:
    async with target.async_client() as runnel, target.async_http() as http:
        await runnel.create_stream(run_id, DEFINITION)
        for batch in ([{"payload": 1}, {"paylod": 2}], [{"payload": 1, "idempotency": "k"}],
                      [{"payload": 1, "data": "AA=="}], []):
            response = await http.post(f"/runs/{run_id}/streams/s/records",
                                       json={"records": batch})
            assert response.status_code == 422, (batch, response.text)
            assert response.json()["code"].startswith("invalid_")
        with pytest.raises(RunnelError) as refused:
            await runnel.append(run_id, "s", [{"paylod": 2}])
        assert (refused.value.status, refused.value.code) == (422, "invalid_record")
        assert "paylod" in refused.value.problem["detail"]
        assert (await runnel.read(run_id, "s")).head == 0


async def test_a_closed_stream_refuses_appends_and_close_is_idempotent(
        target: Target, run_id: str) -> None:
    async with target.async_client() as runnel:
        await runnel.create_stream(run_id, DEFINITION)
        await runnel.append(run_id, "s", [{"payload": 1}])
        assert await runnel.close_stream(run_id, "s") == {"closed": True, "head": 1}
        assert await runnel.close_stream(run_id, "s") == {"closed": True, "head": 1}
        with pytest.raises(RunnelError) as closed:
            await runnel.append(run_id, "s", [{"payload": 2}])
        assert (closed.value.status, closed.value.code) == (409, "stream_closed")
        assert (await runnel.read(run_id, "s")).closed is True
        assert [item.sequence async for item in runnel.follow(run_id, "s")] == [1]


async def test_tokens_and_tenants_are_enforced(target: Target, run_id: str) -> None:
    async with target.async_client() as runnel:
        await runnel.create_stream(run_id, DEFINITION)
    path = f"/runs/{run_id}/streams/s/records"
    async with target.async_http(target.mint(tenant="t2")) as other:
        assert_problem(await other.get(path), 404, "not_found")
    async with target.async_http(target.mint(scopes=("streams:read",))) as reader:
        assert_problem(await reader.post(path, json={"records": [{"payload": 1}]}), 403,
                       "forbidden")
    async with target.async_http("not-a-token") as stranger:
        assert_problem(await stranger.get(path), 401, "unauthenticated")


async def test_the_sync_face_appends_reads_and_follows(target: Target, run_id: str) -> None:
    def produce_and_follow() -> list[int]:
        with target.client() as runnel:
            runnel.create_stream(run_id, DEFINITION)
            assert runnel.append(run_id, "s", [{"payload": 1}, {"payload": 2}]) == {
                "sequences": [1, 2], "head": 2, "duplicates": []}
            assert [r.sequence for r in runnel.read(run_id, "s").records] == [1, 2]
            with pytest.raises(RunnelError) as oversize:
                runnel.append(run_id, "s", [{"payload": "x" * 70_000}])
            assert oversize.value.code == "too_large"
            runnel.close_stream(run_id, "s")
            return [item.sequence for item in runnel.follow(run_id, "s")]

    assert await asyncio.wait_for(asyncio.to_thread(produce_and_follow),
                                  GUARD_SECONDS) == [1, 2]


async def test_live_chunks_reach_live_followers_under_the_two_layer_rules(
        target: Target, run_id: str) -> None:
    async with target.async_client() as runnel:
        await runnel.create_stream(run_id, DEFINITION)
        await runnel.append(run_id, "s", [{"payload": "start"}])
        live = Collector(runnel.follow(run_id, "s", live=True))
        plain = Collector(runnel.follow(run_id, "s"))
        # Each is following once its first record came (a chunk before could be dropped).
        await asyncio.gather(live.wait_for(lambda items: len(items) >= 1),
                             plain.wait_for(lambda items: len(items) >= 1))
        async with LivePublisher(runnel, run_id, "s", source="turn", attempt=1) as publisher:
            publisher.publish("Hel")
            publisher.publish("lo")
        await live.wait_for(lambda items: len(items) >= 3)
        await runnel.append(run_id, "s", [{"payload": "Hello", "idempotency_key": "turn"}])
        await live.wait_for(lambda items: len(items) >= 4)
        await runnel.publish_live(run_id, "s", ["late"], source="turn", attempt=1, index=2)
        await runnel.close_stream(run_id, "s")
        items = await live.finished()
        assert [type(item) for item in await plain.finished()] == [Record, Record]
    chunks = [(item.chunk, item.source, item.attempt, item.index) for item in items
              if isinstance(item, LiveEvent)]
    assert chunks == [("Hel", "turn", 1, 0), ("lo", "turn", 1, 1)]  # "late" was dropped
    assert [item.step for item in items if isinstance(item, Record)] == [None, "turn"]


async def test_a_best_effort_stream_stores_nothing_and_delivers_live(target: Target,
                                                                    run_id: str) -> None:
    async with target.async_client() as runnel:
        await runnel.create_stream(run_id, {**DEFINITION, "consumers": [],
                                            "mode": "best_effort"})
        follower = Collector(runnel.follow(run_id, "s"))
        async with asyncio.timeout(GUARD_SECONDS):
            while not follower.items:  # until the follower is registered, chunks may drop
                assert await runnel.append(run_id, "s", [{"payload": "ping"}]) == {
                    "accepted": 1}
                await asyncio.sleep(0.05)
        assert await runnel.append(run_id, "s", [{"payload": 1}, {"payload": 2}]) == {
            "accepted": 2}
        items = await follower.wait_for(
            lambda items: [i.chunk for i in items if isinstance(i, LiveEvent)][-2:] == [1, 2])
        await follower.stop()
        assert all(isinstance(item, LiveEvent) for item in items)
        page = await runnel.read(run_id, "s")
        assert (page.head, page.records) == (0, [])
