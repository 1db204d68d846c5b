"""What one /metrics scrape costs, with and without the Postgres figures.

Prints figures; never passes or fails. Runs against a throwaway database it creates
and drops on the server of `RUNNEL_BENCH_PG_DSN` (an admin DSN, default
`postgresql://postgres@127.0.0.1:5432/postgres`).

    .venv/bin/python -m bench.scrape [--streams 0,10000,100000] [--scrapes 50]

For each store size (open streams, each with two declared consumers and one pending
input delivery per hundred streams), the median and p95 of:
- render: the registry's in-memory collectors only (process, committer, LISTEN,
  pool, workers), what a memory backend's scrape costs;
- refresh: the store's figures (outbox depth and age, consumer lag), one statement;
- scrape: both, as `entrypoints/observability/scrape.py` does them.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time
from collections.abc import Callable

from adapters.postgres import open_postgres
from adapters.postgres.migrations import migrate
from bench.scratch import create_database, drop_database, dsn_for
from entrypoints.observability.metrics import Metrics
from entrypoints.observability.postgres_metrics import PostgresMetrics

_FILL = """
INSERT INTO streams (id, tenant, run_id, stream_id, definition, snapshot_topic, snapshot,
                     version, head, earliest, total_items, total_bytes, closed, legal_hold,
                     erased, created_at)
SELECT gen_random_uuid(), 't' || (n % 100), 'r' || n, 's', '{}'::jsonb, 'x', '\\x00'::bytea,
       1, n % 500, 0, n % 500, 0, false, false, false, now()
FROM generate_series($1::int, $2::int - 1) AS n
"""
_CONSUMERS = """
INSERT INTO consumers (stream, consumer_id, acked)
SELECT s.id, c, (s.head / 2) FROM streams AS s, unnest(array['ui', 'audit']) AS c
WHERE NOT EXISTS (SELECT 1 FROM consumers AS k WHERE k.stream = s.id)
"""
_DELIVERIES = """
INSERT INTO input_deliveries (stream, sequence)
SELECT id, 1 FROM streams WHERE (hashtext(id::text) % 100) = 0 ON CONFLICT DO NOTHING
"""


def figures(samples: list[float]) -> str:
    ordered = sorted(samples)
    p95 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.95))]
    return f"median {statistics.median(ordered) * 1000:7.2f} ms, p95 {p95 * 1000:7.2f} ms"


async def timed(work: Callable[[], object], scrapes: int) -> list[float]:
    samples = []
    for _ in range(scrapes):
        started = time.perf_counter()
        result = work()
        if asyncio.iscoroutine(result):
            await result
        samples.append(time.perf_counter() - started)
    return samples


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--streams", default="0,10000,100000")
    parser.add_argument("--scrapes", type=int, default=50)
    args = parser.parse_args()
    database = await create_database("runnel_bench_scrape")
    try:
        dsn = dsn_for(database)
        await migrate(dsn)
        pg = await open_postgres(dsn, migrate=False)
        try:
            metrics = Metrics()
            backend = PostgresMetrics(pg)
            for collector in backend.collectors:
                metrics.registry.register(collector)
            filled = 0
            for size in (int(n) for n in args.streams.split(",")):
                async with pg.pool.acquire() as connection:
                    if size > filled:
                        await connection.execute(_FILL, filled, size)
                        await connection.execute(_CONSUMERS)
                        await connection.execute(_DELIVERIES)
                        await connection.execute("ANALYZE")
                        filled = size
                await backend.refresh(30.0)  # warm the plan and the cache

                async def scrape() -> None:
                    await backend.refresh(2.0)
                    metrics.render()

                render = await timed(metrics.render, args.scrapes)
                refresh = await timed(lambda: backend.refresh(2.0), args.scrapes)
                both = await timed(scrape, args.scrapes)
                print(f"{size:>7} streams: render  {figures(render)}")
                print(f"{'':>15} refresh {figures(refresh)}")
                print(f"{'':>15} scrape  {figures(both)}")
        finally:
            await pg.close()
    finally:
        await drop_database(database)


if __name__ == "__main__":
    asyncio.run(main())
