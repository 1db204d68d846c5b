"""Append throughput through the application layer, beside the raw Postgres floor (ADR 0003).

Prints figures; never passes or fails. Runs on uvloop (as `runnel serve` does), against a
throwaway database on the server of `RUNNEL_BENCH_PG_DSN` (an admin DSN, default
`postgresql://postgres@127.0.0.1:5432/postgres`), each run after a VACUUM, like pgbench.

    .venv/bin/python -m bench.append [--seconds 2] [--rounds 3] [--locked] [--max-group 1]
                                     [--only-window]

Scenarios (each runs for a fixed time and counts what was acknowledged):
- raw floor: a plain asyncpg single-row INSERT-and-commit loop, 1 and 16
  connections (the best a one-commit-per-append design could hope for);
- single-record appends through `RunnelService.appender`, with 1 producer,
  16 producers on 16 streams, and 16 producers on one hot stream;
- batched appends of 100 records, 1 and 8 producers on their own streams;
- single-record appends by 16 producers on one hot stream whose consumer stays
  1,000 and then 100,000 records behind (`--only-window` runs just these two).

A consumer acks each stream's head continuously, as a live reader would, so
the unread window (and with it the snapshot) stays small; in the window
scenarios it acks `head - window` instead, so the window stays that long.

Targets, as ratios of the same run: 16 producers >= 0.5 x raw floor at 16;
batched >= 50,000 records/s; hot stream at 100k unread >= 0.9 x at 1k unread
(credit is counters, whatever the window: ADR 0047).
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

import asyncpg
import uvloop

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from adapters.clock import SystemClock
from adapters.postgres import PostgresAdapters, open_postgres
from application.node import NodeSettings
from bench.scratch import create_database, drop_database, dsn_for
from domain.credit_ceilings import DEFAULT_CEILINGS, CreditCeilings
from domain.identifiers import StreamKey
from domain.principal import Principal
from entrypoints.testing.simulation import simulation

PRODUCER = Principal("bench", "bench", frozenset({"streams:read", "streams:write"}))
RUN = "bench-run"
WINDOWS = (1_000, 100_000)
"""Unread windows of the hot-stream credit scenarios: the baseline, and the one measured
against it."""


def bench_key(name: str) -> StreamKey:
    return StreamKey(PRODUCER.tenant, RUN, name)

CREDIT = {"max_unread_items": DEFAULT_CEILINGS.max_unread_items,
          "max_unread_bytes": DEFAULT_CEILINGS.max_unread_bytes,
          "max_total_items": DEFAULT_CEILINGS.max_total_items,
          "max_total_bytes": DEFAULT_CEILINGS.max_total_bytes}
"""As much credit as a node's default ceilings admit: the bench measures appends, not
backpressure (a definition above a ceiling is refused: ADR 0025)."""


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
        self.adapters = adapters
        # The bench's streams pin more credit than a default node allows (ADR 0025).
        ceilings = CreditCeilings(max_unread_bytes=CREDIT["max_unread_bytes"],
                                  max_total_items=CREDIT["max_total_items"],
                                  max_total_bytes=CREDIT["max_total_bytes"])
        self.service = simulation(NodeSettings(credit_ceilings=ceilings), SystemClock(),
                                  backend=adapters).service
        self.heads: dict[str, int] = {}

    async def streams(self, prefix: str, count: int) -> list[str]:
        names = [f"{prefix}-{n}" for n in range(count)]
        for name in names:
            await self.service.definitions.create(PRODUCER, RUN, {
                "stream_id": name, "content_class": "output.text", "credit": CREDIT,
                "consumers": ["reader"]})
            self.heads[name] = 0
        return names

    async def ack_continuously(self, names: list[str], stop: asyncio.Event,
                               window: int = 0) -> None:
        """A reader acking what it has seen keeps the unread window small (`window`: it
        stays that many records behind the head)."""
        acked = dict.fromkeys(names, -1)
        while not stop.is_set():
            for name in names:
                target = self.heads[name] - window
                if target > max(acked[name], 0):
                    await self.service.acknowledger.ack(PRODUCER, RUN, name, "reader", target)
                    acked[name] = target
            await asyncio.sleep(0.02)

    async def fill(self, name: str, window: int) -> None:
        """Append, unacked, until `window` records are unread on stream `name`."""
        loaded = await self.adapters.store.load(bench_key(name))
        assert loaded is not None
        missing = window - loaded.usage.unread_items
        records = [{"payload": {"token": "hello world", "n": n}} for n in range(1000)]
        while missing > 0:
            result = await self.service.appender.append(PRODUCER, RUN, name,
                                                        records[:min(missing, 1000)])
            self.heads[name] = result.head
            missing -= result.stored

    async def appending(self, name: str, seconds: float, streams: list[str], producers: int,
                        batch: int, window: int = 0) -> Figure:
        if window:
            for stream in streams:
                await self.fill(stream, window)
        stop = asyncio.Event()
        acker = asyncio.create_task(self.ack_continuously(streams, stop, window))
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


async def windows(bench: Bench, seconds: float, keep: Callable[[str, Awaitable[Figure]],
                  Awaitable[Figure]], streams: dict[int, list[str]], reverse: bool) -> float:
    """One round of the hot-stream scenarios at each unread window; the ratio of the
    largest window's figure to the smallest's. Rounds alternate the order (`reverse`):
    on this box the first scenario of a round runs measurably slower, whichever it is."""
    figures: dict[int, Figure] = {}
    for window in (reversed(WINDOWS) if reverse else WINDOWS):
        figures[window] = await keep(f"window{window}", bench.appending(
            f"app: 16 producers on 1 hot stream, {window:,} unread", seconds,
            streams[window], 16, 1, window))
    return figures[WINDOWS[-1]].appends_per_second / figures[WINDOWS[0]].appends_per_second


async def main(seconds: float, rounds: int, commit_connections: int, max_group: int,
               locked: bool, only_window: bool) -> None:
    database = await create_database("runnel_bench")
    dsn = dsn_for(database)
    runs: dict[str, list[Figure]] = {}
    ratios: dict[str, list[float]] = {"spread": [], "hot": [], "window": []}

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
            windowed = {window: await bench.streams(f"window-{window}", 1)
                        for window in WINDOWS}
            # Rounds interleave the floor with the scenarios measured against it, so a
            # neighbour's burst on a shared machine hits both sides of a ratio alike.
            for round_number in range(rounds):
                ratios["window"].append(await windows(bench, seconds, keep, windowed,
                                                      reverse=round_number % 2 == 1))
                if only_window:
                    continue
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
        await drop_database(database)
    print(f"Runnel append benchmark: {rounds} rounds of {seconds:g} s per scenario, "
          f"{os.cpu_count()} CPUs, {commit_connections} commit connection(s), "
          f"at most {max_group} units of work per transaction"
          f"{', every group locked' if locked else ''}; medians")
    report([median_figure(figures) for figures in runs.values()])
    print("Targets (median of the per-round ratios):")
    window = sorted(ratios["window"])
    print(f"  hot stream at {WINDOWS[-1]:,} unread: {window[len(window) // 2]:.2f} x at "
          f"{WINDOWS[0]:,} unread (target >= 0.9; rounds: "
          f"{', '.join(f'{r:.2f}' for r in ratios['window'])})")
    if only_window:
        return
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
    parser.add_argument("--only-window", action="store_true",
                        help="only the hot-stream scenarios at 1k and 100k unread")
    arguments = parser.parse_args()
    uvloop.run(main(arguments.seconds, arguments.rounds, arguments.commit_connections,
                    arguments.max_group, arguments.locked, arguments.only_window))
