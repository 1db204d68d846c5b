"""The runs listing (ADR 0046) on Postgres, beside the streams listing of one run.

Prints figures; never passes or fails. Runs against a throwaway database it creates and
drops on the server of `RUNNEL_BENCH_PG_DSN` (an admin DSN, default
`postgresql://postgres@127.0.0.1:5432/postgres`). Takes well under a minute.

    .venv/bin/python -m bench.runs_listing [--runs 2000] [--streams 5] [--calls 300]

Two tenants hold `--runs` runs of `--streams` streams each, every fourth run erased.
Figures, median and p95 of `--calls` calls each: a first page of 100 runs, a page from the
middle (after a cursor), the last page, and, as the baseline, the existing listing of one
run's streams (page of 100) and `SELECT 1` (the round trip). The plan of a middle page
shows how many stream rows it read: about (page + 1) x streams per run, not the tenant's
whole set.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path

import asyncpg
import uvloop

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from adapters.clock import SystemClock
from adapters.postgres import open_postgres
from adapters.postgres.store import _LIST_RUNS
from application.ports.streams import RunSummary
from bench.scratch import create_database, drop_database, dsn_for
from domain.definition import build_definition
from domain.identifiers import RunKey
from domain.stream import Stream

TENANTS = ("bench", "neighbour")


async def timed(calls: int, call: Callable[[], Awaitable[object]]) -> tuple[float, float]:
    samples = []
    for _ in range(calls):
        started = time.perf_counter()
        await call()
        samples.append((time.perf_counter() - started) * 1e6)
    samples.sort()
    return statistics.median(samples), samples[int(len(samples) * 0.95) - 1]


async def main(runs: int, streams: int, calls: int) -> None:
    database = await create_database("runnel_bench")
    dsn = dsn_for(database)
    try:
        adapters = await open_postgres(dsn, listen=False, pool_size=20)
        store = adapters.store
        now = SystemClock().now()
        try:
            keys = [RunKey(tenant, f"run-{n:05d}").stream(f"s{k}")
                    for tenant in TENANTS for n in range(runs) for k in range(streams)]
            for start in range(0, len(keys), 64):
                await asyncio.gather(*(store.create(Stream.start(key, build_definition(
                    {"stream_id": key.stream_id, "content_class": "output.text"}, "local"),
                    now)) for key in keys[start:start + 64]))
            for tenant in TENANTS:  # every fourth run erased: pages skip them
                for n in range(0, runs, 4):
                    await store.mark_run_erased(RunKey(tenant, f"run-{n:05d}"))
            vacuum = await asyncpg.connect(dsn)
            await vacuum.execute("VACUUM ANALYZE")

            def page(after: str | None) -> Awaitable[Sequence[RunSummary]]:
                """A page as a reader (not an admin) sees it: the readers pin is asked."""
                return store.list_runs("bench", after, 101, now, "reader")

            middle = f"run-{runs // 2:05d}"
            last = f"run-{runs - 50:05d}"
            figures = {
                "SELECT 1 (round trip)": lambda: vacuum.fetchval("SELECT 1"),
                "streams of one run (page of 100), baseline":
                    lambda: store.list_run(RunKey("bench", middle), None, 101),
                "runs, first page of 100": lambda: page(None),
                "runs, a middle page of 100": lambda: page(middle),
                "runs, the last page (50)": lambda: page(last),
            }
            print(f"Runs listing: {len(TENANTS)} tenants x {runs} runs x {streams} streams "
                  f"({len(keys)} streams, a quarter of the runs erased), {calls} calls "
                  "each; median / p95 in µs")
            for name, call in figures.items():
                median, p95 = await timed(calls, call)
                print(f"  {name:46s} {median:8.0f} {p95:8.0f}")
            plan = await vacuum.fetch(f"EXPLAIN (ANALYZE, BUFFERS) {_LIST_RUNS}", "bench",
                                      middle, 101, now, "reader")
            print("  plan of a middle page:")
            for row in plan:
                print("    " + row[0])
            await vacuum.close()
        finally:
            await adapters.close()
    finally:
        await drop_database(database)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=2000)
    parser.add_argument("--streams", type=int, default=5)
    parser.add_argument("--calls", type=int, default=300)
    arguments = parser.parse_args()
    uvloop.run(main(arguments.runs, arguments.streams, arguments.calls))
