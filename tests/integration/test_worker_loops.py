"""A worker loop survives a failing sweep, runs again at once after a full batch, and stops
when cancelled (shutdown)."""

from __future__ import annotations

import asyncio

import pytest

from entrypoints.metrics import Metrics
from entrypoints.workers import Worker, every

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
