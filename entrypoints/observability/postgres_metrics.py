"""What a Postgres backend reports in /metrics: read from the live adapters at scrape time.

Rules:
- no second copy of any count: the committer's `stats`, the LISTEN bus and the pool
  keep their own figures, and `PostgresCollector` only reads them when scraped (a
  cheap, synchronous read of a few attributes);
- the store's figures (outbox backlogs, consumer lag: `store_gauges.py`) need a query,
  so `refresh()` runs it, bounded, before a scrape renders; a store that does not
  answer in time gives NaN for each of them (unknown, never a stale value);
- the memory backend has none of these parts and reports none of these families.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Iterator

from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
)
from prometheus_client.registry import Collector

from adapters.postgres import PostgresAdapters
from adapters.postgres.group_commit.outcomes import GROUP_SIZE_BUCKETS
from adapters.postgres.pool import BoundedPool
from adapters.postgres.store_gauges import LAG_THRESHOLDS, StoreFigures, StoreGauges

OUTBOXES = ("input_deliveries", "body_deletions")


class PostgresCollector(Collector):
    """The group committer, the LISTEN connection and the pool of one node."""

    def __init__(self, pg: PostgresAdapters) -> None:
        self._pg = pg

    def collect(self) -> Iterator[Metric]:
        yield from self._committer()
        yield from self._listen()
        yield from self._pool()

    def _committer(self) -> Iterator[Metric]:
        committer = self._pg.store.committer
        stats = committer.stats
        for name, value, text in (
                ("groups", stats.groups, "Shared transactions committed by the group "
                 "committer (optimistic or locked)"),
                ("units", stats.units, "Units of work accepted in committed groups"),
                ("optimistic_groups", stats.optimistic_groups, "Groups committed by one "
                 "optimistic statement, without a row lock"),
                ("conflicts", stats.conflicts, "Optimistic groups that met another "
                 "writer's change and ran again under the row lock"),
                ("failed_groups", stats.failed_groups, "Groups whose transaction failed "
                 "(their units of work answered an error)"),
                ("fenced_groups", stats.fenced_groups, "Groups refused because this node's "
                 "region is fenced (nothing written)")):
            yield CounterMetricFamily(f"runnel_group_commit_{name}", text, value=value)
        buckets: list[tuple[str, float]] = []
        cumulative = 0
        for bound, count in zip((*GROUP_SIZE_BUCKETS, math.inf), stats.size_counts,
                                strict=True):
            cumulative += count
            buckets.append(("+Inf" if bound == math.inf else str(bound), cumulative))
        yield HistogramMetricFamily("runnel_group_commit_size", "Units of work per "
                                    "committed group", buckets=buckets,
                                    sum_value=stats.size_sum)
        yield GaugeMetricFamily("runnel_group_commit_queued", "Units of work waiting for "
                                "the next group", value=committer.waiting)

    def _listen(self) -> Iterator[Metric]:
        bus = self._pg.bus
        yield GaugeMetricFamily("runnel_listen_connected", "1 while this process's LISTEN "
                                "connection is up (0: readers hear no other process)",
                                value=bus.listen_connections)
        yield CounterMetricFamily("runnel_listen_reconnects", "Times the LISTEN connection "
                                  "was re-established after a loss", value=bus.reconnects)
        yield CounterMetricFamily("runnel_listen_notifications", "NOTIFY payloads received "
                                  "on the LISTEN connection", value=bus.stats.notifications)
        yield CounterMetricFamily("runnel_live_chunks_dropped", "Best-effort live chunks "
                                  "this node dropped before sending (queue full or closed)",
                                  value=bus.stats.live_dropped)

    def _pool(self) -> Iterator[Metric]:
        pool = self._pg.pool
        size, idle = pool.get_size(), pool.get_idle_size()
        waiting = pool.waiting if isinstance(pool, BoundedPool) else 0
        yield GaugeMetricFamily("runnel_db_pool_size", "Connections the pool holds open",
                                value=size)
        yield GaugeMetricFamily("runnel_db_pool_max_size", "Connections the pool may open "
                                "(RUNNEL_DB_POOL_SIZE, at least commit connections + 2)",
                                value=pool.get_max_size())
        yield GaugeMetricFamily("runnel_db_pool_in_use", "Pool connections acquired right "
                                "now", value=size - idle)
        yield GaugeMetricFamily("runnel_db_pool_waiting", "Callers waiting for a pool "
                                "connection right now", value=waiting)


class StoreFiguresCollector(Collector):
    """The store's outbox backlogs and consumer lag, as `refresh()` last read them."""

    def __init__(self, gauges: StoreGauges) -> None:
        self._gauges = gauges
        self._figures: StoreFigures | None = None

    async def refresh(self, timeout: float) -> None:
        try:
            async with asyncio.timeout(timeout):  # the pool's acquire included
                self._figures = await self._gauges.read(timeout)
        except Exception:  # the store is away or slow: unknown, never a stale figure
            self._figures = None

    def collect(self) -> Iterator[Metric]:
        figures = self._figures
        depth = GaugeMetricFamily("runnel_outbox_depth", "Rows waiting in an outbox, in the "
                                  "whole store (input_deliveries: neither delivered nor "
                                  "dead-lettered; body_deletions: every body not yet "
                                  "deleted)", labels=["outbox"])
        age = GaugeMetricFamily("runnel_outbox_oldest_age_seconds", "Age of the oldest row "
                                "waiting in an outbox (input_deliveries: since it was "
                                "written; body_deletions: since it fell due); 0 when none",
                                labels=["outbox"])
        backlogs = (None, None) if figures is None else (figures.inputs, figures.deletions)
        for outbox, backlog in zip(OUTBOXES, backlogs, strict=True):
            depth.add_metric([outbox], math.nan if backlog is None else backlog.depth)
            age.add_metric([outbox],
                           math.nan if backlog is None else backlog.oldest_age_seconds)
        yield depth
        yield age
        yield GaugeMetricFamily("runnel_consumer_lag_max", "Largest head - ack of a declared "
                                "consumer of an open stream, in the whole store",
                                value=math.nan if figures is None else figures.lag_max)
        yield GaugeMetricFamily("runnel_consumer_lag_sum", "Sum of head - ack over the "
                                "declared consumers of open streams, in the whole store",
                                value=math.nan if figures is None else figures.lag_sum)
        lagging = GaugeMetricFamily("runnel_consumers_lagging", "Declared consumers of open "
                                    "streams at least `at_least` records behind their "
                                    "head", labels=["at_least"])
        for threshold in LAG_THRESHOLDS:
            lagging.add_metric([str(threshold)], math.nan if figures is None
                               else figures.lagging[threshold])
        yield lagging


class PostgresMetrics:
    """Everything a Postgres backend adds to a node's registry; without `store_figures`,
    the node reads no store figure (every node reports the same ones: a few suffice)."""

    def __init__(self, pg: PostgresAdapters, store_figures: bool = True) -> None:
        self._store = StoreFiguresCollector(StoreGauges(pg.pool)) if store_figures else None
        self.collectors: tuple[Collector, ...] = (
            (PostgresCollector(pg),) if self._store is None
            else (PostgresCollector(pg), self._store))

    async def refresh(self, timeout: float) -> None:
        if self._store is not None:
            await self._store.refresh(timeout)
