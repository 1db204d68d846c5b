"""Append throughput through the application layer, beside the raw Postgres floor.

Prints figures; never passes or fails. Runs against a throwaway database it
creates and drops on the server of `RUNNEL_BENCH_PG_DSN` (an admin DSN,
default `postgresql://postgres@127.0.0.1:5432/postgres`). Takes about a minute.
Runs on uvloop, the loop `runnel serve` runs on (uvicorn picks it), for the floor
and the application alike. Like pgbench, every run starts after a VACUUM.

    .venv/bin/python -m bench.append [--seconds 2] [--rounds 3] [--locked] [--max-group 1]

Scenarios (each runs for a fixed time and counts what was acknowledged):
- raw floor: a plain asyncpg single-row INSERT-and-commit loop, 1 and 16
  connections (the best a one-commit-per-append design could hope for);
- single-record appends through `RunnelService.appender`, with 1 producer,
  16 producers on 16 streams, and 16 producers on one hot stream;
- batched appends of 100 records, 1 and 8 producers on their own streams.

A consumer acks each stream's head continuously, as a live reader would, so
the unread window (and with it the snapshot) stays small.

Targets, as ratios of the same run: 16 producers >= 0.5 x raw floor at 16;
batched >= 50,000 records/s.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import asyncpg
import uvloop

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from adapters.clock import SystemClock
from adapters.memory.objects import MemoryObjectStore
from adapters.memory.workflow import MemoryWorkflowWaitService
from adapters.postgres import PostgresAdapters, open_postgres
from application.node import NodeSettings
from application.service import Ports, RunnelService
from domain.principal import Principal

ADMIN_DSN = os.environ.get("RUNNEL_BENCH_PG_DSN",
                           "postgresql://postgres@127.0.0.1:5432/postgres")
PRODUCER = Principal("bench", "bench", frozenset({"streams:read", "streams:write"}))
RUN = "bench-run"
CREDIT = {"max_unread_items": 100_000, "max_unread_bytes": 1 << 30,
          "max_total_items": 1 << 40, "max_total_bytes": 1 << 50}


@dataclass
class Figure:
    name: str
    appends: int
    records: int
    seconds: float

    @property
    def appends_per_second(self) -> float:
        return self.appends / self.seconds

    @property
    def records_per_second(self) -> float:
        return self.records / self.seconds


def dsn_for(database: str) -> str:
    parts = urlsplit(ADMIN_DSN)
    return urlunsplit((parts.scheme, parts.netloc, "/" + database, parts.query, parts.fragment))


async def timed(name: str, seconds: float, workers: int,
                step: Callable[[int], Awaitable[int]]) -> Figure:
    """Run `workers` loops of `step(worker)` (returning records stored) for `seconds`."""
    appends = records = 0
    deadline = time.perf_counter() + seconds

    async def loop(worker: int) -> None:
        nonlocal appends, records
        while time.perf_counter() < deadline:
            stored = await step(worker)
            records += stored
            appends += 1

    started = time.perf_counter()
    await asyncio.gather(*(loop(worker) for worker in range(workers)))
    return Figure(name, appends, records, time.perf_counter() - started)


async def raw_floor(dsn: str, seconds: float, connections: int) -> Figure:
    """Each worker holds its own connection and loops one prepared INSERT (autocommit)."""
    admin = await asyncpg.connect(dsn)
    await admin.execute("CREATE TABLE IF NOT EXISTS raw_floor (stream uuid, sequence bigint, "
                        "payload json, appended_at timestamptz, PRIMARY KEY (stream, sequence))")
    await admin.close()
    links = [await asyncpg.connect(dsn) for _ in range(connections)]
    inserts = [await link.prepare("INSERT INTO raw_floor VALUES ($1, $2, $3, now())")
               for link in links]
    streams = [uuid.uuid4() for _ in range(connections)]
    counters = [0] * connections

    async def step(worker: int) -> int:
        counters[worker] += 1
        await inserts[worker].fetch(streams[worker], counters[worker],
                                    '{"token":"hello world"}')
        return 1

    try:
        return await timed(f"raw floor: INSERT+commit, {connections} connection(s)",
                           seconds, connections, step)
    finally:
        for link in links:
            await link.close()


class Bench:
    def __init__(self, adapters: PostgresAdapters) -> None:
        ports = Ports(store=adapters.store, reader=adapters.reader, bus=adapters.bus,
                      objects=MemoryObjectStore(("local",)), gaps=adapters.gaps,
                      outbox=adapters.outbox, deletions=adapters.deletions,
                      wait_service=MemoryWorkflowWaitService(),
                      clock=SystemClock(), leases=adapters.leases)
        self.adapters = adapters
        self.service = RunnelService.build(ports, NodeSettings())
        self.heads: dict[str, int] = {}

    async def streams(self, prefix: str, count: int) -> list[str]:
        names = [f"{prefix}-{n}" for n in range(count)]
        for name in names:
            await self.service.definitions.create(PRODUCER, RUN, {
                "stream_id": name, "content_class": "output.text", "credit": CREDIT,
                "consumers": ["reader"]})
            self.heads[name] = 0
        return names

    async def ack_continuously(self, names: list[str], stop: asyncio.Event) -> None:
        """A reader acking what it has seen keeps the unread window small."""
        acked = dict.fromkeys(names, 0)
        while not stop.is_set():
            for name in names:
                head = self.heads[name]
                if head > acked[name]:
                    await self.service.acks.ack(PRODUCER, RUN, name, "reader", head)
                    acked[name] = head
            await asyncio.sleep(0.02)

    async def appending(self, name: str, seconds: float, streams: list[str], producers: int,
                        batch: int) -> Figure:
        stop = asyncio.Event()
        acker = asyncio.create_task(self.ack_continuously(streams, stop))
        records = [{"payload": {"token": "hello world", "n": n}} for n in range(batch)]

        async def step(worker: int) -> int:
            stream = streams[worker % len(streams)]
            result = await self.service.appender.append(PRODUCER, RUN, stream, records)
            self.heads[stream] = max(self.heads[stream], result.head)
            return result.stored

        stats = self.adapters.store.committer.stats
        groups, units = stats.groups, stats.units
        try:
            figure = await timed(name, seconds, producers, step)
        finally:
            stop.set()
            await acker
        per_group = (stats.units - units) / max(1, stats.groups - groups)
        figure.name += f"  [{per_group:.1f} units of work per transaction]"
        return figure


def median_figure(runs: list[Figure]) -> Figure:
    ordered = sorted(runs, key=lambda figure: figure.appends_per_second)
    return ordered[len(ordered) // 2]


def report(figures: list[Figure]) -> None:
    width = max(len(figure.name) for figure in figures)
    for figure in figures:
        print(f"  {figure.name:<{width}}  {figure.appends_per_second:>9,.0f} appends/s"
              f"  {figure.records_per_second:>9,.0f} records/s")


async def main(seconds: float, rounds: int, commit_connections: int, max_group: int,
               locked: bool) -> None:
    database = f"runnel_bench_{uuid.uuid4().hex[:10]}"
    admin = await asyncpg.connect(ADMIN_DSN)
    await admin.execute(f'CREATE DATABASE "{database}"')
    await admin.close()
    dsn = dsn_for(database)
    runs: dict[str, list[Figure]] = {}
    ratios: dict[str, list[float]] = {"spread": [], "hot": []}

    async def keep(key: str, scenario: Awaitable[Figure]) -> Figure:
        # Like pgbench, each run starts from a vacuumed database: in a live one,
        # autovacuum keeps the dead row versions of previous runs in check.
        vacuum = await asyncpg.connect(dsn)
        try:
            await vacuum.execute("VACUUM")
        finally:
            await vacuum.close()
        figure = await scenario
        runs.setdefault(key, []).append(figure)
        return figure

    try:
        adapters = await open_postgres(dsn, listen=False, pool_size=20,
                                       commit_connections=commit_connections,
                                       max_group=max_group)
        adapters.store.committer.optimistic = not locked
        try:
            bench = Bench(adapters)
            one = await bench.streams("single", 1)
            sixteen = await bench.streams("spread", 16)
            hot = await bench.streams("hot", 1)
            batched = await bench.streams("batched", 8)
            # Rounds interleave the floor with the scenarios measured against it, so a
            # neighbour's burst on a shared machine hits both sides of a ratio alike.
            for _ in range(rounds):
                await keep("raw1", raw_floor(dsn, seconds, 1))
                await keep("app1", bench.appending("app: 1 producer, 1 record/append",
                                                   seconds, one, 1, 1))
                floor = await keep("raw16", raw_floor(dsn, seconds, 16))
                spread = await keep("spread", bench.appending(
                    "app: 16 producers on 16 streams", seconds, sixteen, 16, 1))
                ratios["spread"].append(spread.appends_per_second / floor.appends_per_second)
                floor = await keep("raw16", raw_floor(dsn, seconds, 16))
                hot_figure = await keep("hot", bench.appending(
                    "app: 16 producers on 1 hot stream", seconds, hot, 16, 1))
                ratios["hot"].append(hot_figure.appends_per_second / floor.appends_per_second)
                await keep("batch1", bench.appending("app: 1 producer, 100 records/append",
                                                     seconds, batched[:1], 1, 100))
                await keep("batch8", bench.appending("app: 8 producers, 100 records/append",
                                                     seconds, batched, 8, 100))
        finally:
            await adapters.close()
    finally:
        admin = await asyncpg.connect(ADMIN_DSN)
        await admin.execute(f'DROP DATABASE IF EXISTS "{database}" WITH (FORCE)')
        await admin.close()
    print(f"Runnel append benchmark: {rounds} rounds of {seconds:g} s per scenario, "
          f"{os.cpu_count()} CPUs, {commit_connections} commit connection(s), "
          f"at most {max_group} units of work per transaction"
          f"{', every group locked' if locked else ''}; medians")
    report([median_figure(figures) for figures in runs.values()])
    print("Targets (median of the per-round ratios):")
    for name, label in (("spread", "16 producers on 16 streams"),
                        ("hot", "16 producers on 1 hot stream")):
        ordered = sorted(ratios[name])
        each = ", ".join(f"{r:.2f}" for r in ratios[name])
        print(f"  {label}: {ordered[len(ordered) // 2]:.2f} x raw floor at 16 "
              f"(target >= 0.5; rounds: {each})")
    best = max(median_figure(runs[key]).records_per_second for key in ("batch1", "batch8"))
    print(f"  batched: {best:,.0f} records/s (target >= 50,000)")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seconds", type=float, default=2.0)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--commit-connections", type=int, default=3)
    parser.add_argument("--max-group", type=int, default=256,
                        help="1 = one transaction per command, to compare")
    parser.add_argument("--locked", action="store_true",
                        help="every group under the row lock (no optimistic groups), to compare")
    arguments = parser.parse_args()
    uvloop.run(main(arguments.seconds, arguments.rounds, arguments.commit_connections,
                    arguments.max_group, arguments.locked))
