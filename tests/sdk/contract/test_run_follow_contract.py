"""`follow_run` (ADR 0073) against `InMemoryRunnel` and a real server alike: every record
of every readable stream once, in its stream's order, later streams included, resumed
exactly from the compound cursor, ended by the run's erasure; the same refusals."""

from __future__ import annotations

import asyncio

import pytest
from runnel_client import Record, RunFollowState, RunnelError

from tests.http.support import assert_problem
from tests.sdk.contract.conftest import Target
from tests.sdk.support import Collector


def definition(stream_id: str, **pins: object) -> dict[str, object]:
    return {"stream_id": stream_id, "content_class": "output.text", **pins}


async def test_follow_run_gets_every_stream_once_in_order_and_ends_when_erased(
        target: Target, run_id: str) -> None:
    async with target.async_client() as runnel:
        await runnel.create_stream(run_id, definition("a"))
        await runnel.create_stream(run_id, definition("b"))
        await runnel.append(run_id, "a", [{"payload": 1}, {"payload": 2}])
        await runnel.append(run_id, "b", [{"payload": "x"}])
        follower = Collector(runnel.follow_run(run_id))
        await follower.wait_for(lambda items: len(items) >= 3)
        await runnel.create_stream(run_id, definition("later"))
        await runnel.append(run_id, "later", [{"payload": "new"}])
        await runnel.append(run_id, "a", [{"payload": 3}])
        await follower.wait_for(lambda items: len(items) >= 5)
        async with target.async_http(target.mint(scopes=("streams:admin",))) as admin:
            assert (await admin.delete(f"/runs/{run_id}")).status_code == 200
        items = await follower.finished()
    assert all(isinstance(item, Record) for item in items)
    by_stream = {(item.stream_id, item.sequence) for item in items}
    assert by_stream == {("a", 1), ("a", 2), ("a", 3), ("b", 1), ("later", 1)}
    assert [item.sequence for item in items if item.stream_id == "a"] == [1, 2, 3]


def test_the_sync_follow_run_resumes_exactly_from_its_state(target: Target,
                                                             run_id: str) -> None:
    with target.client() as runnel:
        for stream_id in ("a", "b"):
            runnel.create_stream(run_id, definition(stream_id))
            runnel.append(run_id, stream_id, [{"payload": n} for n in range(4)])
        state = RunFollowState()
        first = []
        follow = runnel.follow_run(run_id, state=state)
        for item in follow:
            first.append((item.stream_id, item.sequence))
            if len(first) == 5:
                break
        follow.close()  # type: ignore[attr-defined]
        rest = []
        for item in runnel.follow_run(run_id, state=state):
            rest.append((item.stream_id, item.sequence))
            if len(first) + len(rest) == 8:
                break
    assert sorted(first + rest) == [(s, n) for s in "ab" for n in range(1, 5)]
    assert state.cursor == {"a": 4, "b": 4}


async def test_follow_run_starts_from_after_and_narrows_by_streams(
        target: Target, run_id: str) -> None:
    async with target.async_client() as runnel:
        for stream_id in ("a", "b", "c"):
            await runnel.create_stream(run_id, definition(stream_id))
            await runnel.append(run_id, stream_id, [{"payload": n} for n in range(3)])
        follower = Collector(runnel.follow_run(run_id, {"a": 2}, streams=["a", "b"]))
        items = await follower.wait_for(lambda items: len(items) >= 4)
        await asyncio.sleep(0.05)
        await follower.stop()
    assert sorted((item.stream_id, item.sequence) for item in items) == [
        ("a", 3), ("b", 1), ("b", 2), ("b", 3)]


async def test_the_same_refusals(target: Target, run_id: str) -> None:
    async with target.async_client() as runnel, target.async_http() as http:
        await runnel.create_stream(run_id, definition("a"))
        with pytest.raises(RunnelError) as unknown:
            await anext(runnel.follow_run(run_id + "-none"))
        assert (unknown.value.status, unknown.value.code) == (404, "not_found")
        with pytest.raises(RunnelError) as future:
            await anext(runnel.follow_run(run_id, {"a": 5}))
        assert (future.value.status, future.value.code) == (400, "future_cursor")
        url = f"/runs/{run_id}/subscribe"
        assert_problem(await http.get(url, headers={"Last-Event-ID": "a"}), 400,
                       "invalid_cursor")
        assert_problem(await http.get(url, params={"after": "a=1," * 1100}), 400,
                       "cursor_too_large")
