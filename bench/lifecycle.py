"""The native stream lifecycle through the application layer on the in-memory adapters
(ADR 0075, 0076), each figure beside a same-run baseline.

Prints figures; never passes or fails.

    .venv/bin/python -m bench.lifecycle [--rounds 200] [--records 10000]

- long-poll: from an append's start to the answer of a read that was waiting
  (`read(wait=30)`), beside the same for an open follow's next record frame (SSE's path);
- delete: `DELETE` of one stream holding `--records` records, beside erasing a run whose
  one stream holds as many (`DELETE /runs/{id}`).
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from application.follow_frames import RecordFrame
from domain.principal import Principal
from entrypoints.testing.simulation import Simulation, simulation

ALICE = Principal("alice", "t1", frozenset({"streams:read", "streams:write", "streams:admin"}))
DEFINITION = {"stream_id": "s", "content_class": "output.text"}


async def long_poll_latency(sim: Simulation, run: str, rounds: int) -> list[float]:
    await sim.service.definitions.create(ALICE, run, DEFINITION)
    seconds: list[float] = []
    for n in range(rounds):
        waiting = asyncio.create_task(sim.service.reading.read(ALICE, run, "s", n, wait=30))
        while sim.service.follower.open_follows == 0:
            await asyncio.sleep(0)
        started = time.perf_counter()
        await sim.service.appender.append(ALICE, run, "s", [{"payload": n}])
        await waiting
        seconds.append(time.perf_counter() - started)
    return seconds


async def follow_latency(sim: Simulation, run: str, rounds: int) -> list[float]:
    await sim.service.definitions.create(ALICE, run, DEFINITION)
    follow = await sim.service.follower.open(ALICE, run, "s", 0)
    frames = follow.frames()
    seconds: list[float] = []
    try:
        for n in range(rounds):
            started = time.perf_counter()
            await sim.service.appender.append(ALICE, run, "s", [{"payload": n}])
            while not isinstance(await anext(frames), RecordFrame):
                pass
            seconds.append(time.perf_counter() - started)
    finally:
        await follow.close()
    return seconds


async def filled(sim: Simulation, run: str, records: int) -> None:
    await sim.service.definitions.create(ALICE, run, {**DEFINITION, "credit": {
        "max_unread_items": 1_000_000, "max_total_items": 1_000_000}})
    for first in range(0, records, 1000):
        await sim.service.appender.append(
            ALICE, run, "s", [{"payload": n} for n in range(first, min(records, first + 1000))])


async def deletion_seconds(records: int) -> tuple[float, float]:
    sim = simulation()
    await filled(sim, "deleted", records)
    await filled(sim, "erased", records)
    started = time.perf_counter()
    await sim.service.stream_deletion.delete(ALICE, "deleted", "s")
    deleting = time.perf_counter() - started
    started = time.perf_counter()
    await sim.service.lifecycle.erase_run(ALICE, "erased")
    return deleting, time.perf_counter() - started


def summary(seconds: list[float]) -> str:
    ordered = sorted(seconds)
    p99 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]
    return f"median {statistics.median(ordered) * 1e6:8.0f} us   p99 {p99 * 1e6:8.0f} us"


async def main(rounds: int, records: int) -> None:
    sim = simulation()
    polled = await long_poll_latency(sim, "poll", rounds)
    followed = await follow_latency(sim, "follow", rounds)
    print(f"append -> answer of a waiting read   {summary(polled)}   ({rounds} rounds)")
    print(f"append -> follow's record frame      {summary(followed)}   (baseline)")
    deleting, erasing = await deletion_seconds(records)
    print(f"DELETE one stream of {records} records   {deleting * 1e3:8.1f} ms")
    print(f"erase a run of one such stream        {erasing * 1e3:8.1f} ms   (baseline)")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=200)
    parser.add_argument("--records", type=int, default=10_000)
    arguments = parser.parse_args()
    asyncio.run(main(arguments.rounds, arguments.records))
