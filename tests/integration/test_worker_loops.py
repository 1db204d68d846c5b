"""A worker loop survives a failing sweep, runs again at once after a full batch, stops
when cancelled (shutdown), and measures every sweep."""

from __future__ import annotations

import asyncio
import time

import pytest

from domain.errors import RegionFenced
from entrypoints.composition.workers import Worker, every, led
from entrypoints.observability.metrics import Metrics

GUARD_SECONDS = 10.0  # only a guard against a hanging test; no test asserts on time


async def test_a_failing_sweep_is_logged_and_the_loop_goes_on(
        caplog: pytest.LogCaptureFixture) -> None:
    calls: list[int] = []
    third = asyncio.Event()

    async def sweep() -> int:
        calls.append(len(calls))
        if len(calls) == 1:
            raise ConnectionError("database away")
        if len(calls) >= 3:
            third.set()
        return 0

    task = asyncio.create_task(every(Worker("flaky", sweep, 10, 0.0), Metrics()))
    await asyncio.wait_for(third.wait(), GUARD_SECONDS)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert "worker flaky: sweep failed" in caplog.text
    assert "ConnectionError: database away" in caplog.text


async def test_a_full_batch_runs_again_without_waiting_for_the_pause() -> None:
    results = [10, 10, 3]
    calls: list[int] = []
    third = asyncio.Event()

    async def sweep() -> int:
        calls.append(len(calls))
        if len(calls) == 3:
            third.set()
        return results[len(calls) - 1] if len(calls) <= len(results) else 0

    # A pause no test sits through: only the backlog rule reaches the third call.
    task = asyncio.create_task(every(Worker("backlog", sweep, 10, 3600.0), Metrics()))
    try:
        await asyncio.wait_for(third.wait(), GUARD_SECONDS)
        for _ in range(10):
            await asyncio.sleep(0)
        assert len(calls) == 3  # the partial batch (3) waits for the pause
    finally:
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task


async def test_every_sweep_is_timed_a_failure_counted_and_a_success_stamped() -> None:
    metrics = Metrics()
    calls: list[int] = []
    done = asyncio.Event()

    def sample(name: str) -> float | None:
        return metrics.registry.get_sample_value(name, {"worker": "measured"})

    async def sweep() -> int:
        calls.append(len(calls))
        if len(calls) == 1:
            raise ConnectionError("database away")
        if len(calls) == 2:
            raise RegionFenced("local")
        if len(calls) == 3:
            done.set()
            await asyncio.sleep(3600)  # the loop is cancelled inside its fourth sweep
        return 0

    task = asyncio.create_task(every(Worker("measured", sweep, 10, 0.0), metrics))
    try:
        await asyncio.wait_for(done.wait(), GUARD_SECONDS)
        # A failure and a fence so far: both timed, one counted, no success yet.
        assert sample("runnel_worker_sweep_duration_seconds_count") == 2
        assert sample("runnel_worker_sweep_errors_total") == 1
        assert sample("runnel_worker_last_success_timestamp_seconds") == 0
    finally:
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
    assert calls == [0, 1, 2]


async def test_a_successful_sweep_sets_the_last_success_time() -> None:
    metrics = Metrics()
    done = asyncio.Event()

    async def sweep() -> int:
        done.set()
        return 0

    before = time.time()
    task = asyncio.create_task(every(Worker("fine", sweep, 10, 3600.0), metrics))
    try:
        await asyncio.wait_for(done.wait(), GUARD_SECONDS)
        for _ in range(10):
            await asyncio.sleep(0)
        labels = {"worker": "fine"}
        assert metrics.registry.get_sample_value(
            "runnel_worker_last_success_timestamp_seconds", labels) >= before  # type: ignore[operator]
        assert metrics.registry.get_sample_value(
            "runnel_worker_sweep_duration_seconds_count", labels) == 1
        assert metrics.registry.get_sample_value(
            "runnel_worker_sweep_errors_total", labels) == 0
    finally:
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task


class Following:
    """A leadership this process never holds."""

    def __init__(self) -> None:
        self.asked = asyncio.Event()

    async def lead(self) -> bool:
        self.asked.set()
        return False

    async def close(self) -> None:
        return None


async def test_a_led_sweep_a_follower_skips_is_not_measured() -> None:
    metrics = Metrics()
    following = Following()

    async def sweep() -> int:
        raise AssertionError("a follower does not sweep")

    task = asyncio.create_task(every(Worker("upkeep", led(following, sweep), None, 0.0),
                                     metrics))
    try:
        await asyncio.wait_for(following.asked.wait(), GUARD_SECONDS)
        for _ in range(10):
            await asyncio.sleep(0)
        labels = {"worker": "upkeep"}
        assert metrics.registry.get_sample_value(
            "runnel_worker_sweep_duration_seconds_count", labels) == 0
        assert metrics.registry.get_sample_value(
            "runnel_worker_sweep_errors_total", labels) == 0
        assert metrics.registry.get_sample_value(
            "runnel_worker_last_success_timestamp_seconds", labels) == 0
    finally:
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
