"""Figures of the whole store that a scrape reads: outbox backlogs and consumer lag.

Rules:
- one statement, one round trip, bounded by the caller's `timeout` (asyncpg cancels
  the statement on the server when it passes), so a slow or absent store costs a
  scrape at most that long;
- every node of one database reads the same figures (they are the store's, not the
  node's), exactly like `runnel_input_pending`;
- the input outbox's backlog is its rows neither done nor dead, aged from the
  oldest one's `created_at`; the deletion outbox's is every row it holds (a row is
  deleted once its body is), aged from the oldest *due* row's `not_before` (a row
  whose delay has not passed is not late), 0 when none is due;
- lag is `head - acked` of every declared consumer of an open stream (a closed or
  erased stream takes no append any more, so its unread records hold nothing back);
  it is summed, maximised and counted past each of `LAG_THRESHOLDS`, never labelled
  by tenant, run or stream: the series stay bounded whatever the store holds, and
  /metrics, which needs no token, names nobody.
"""

from __future__ import annotations

from dataclasses import dataclass

import asyncpg

LAG_THRESHOLDS = (1, 100, 10_000)
"""`runnel_consumers_lagging{at_least}`: consumers at least this many records behind."""

_FIGURES = """
SELECT
  (SELECT count(*) FROM input_deliveries WHERE NOT done AND NOT dead) AS input_depth,
  (SELECT coalesce(extract(epoch FROM now() - min(created_at)), 0)
     FROM input_deliveries WHERE NOT done AND NOT dead) AS input_age,
  (SELECT count(*) FROM deletion_outbox) AS deletion_depth,
  (SELECT coalesce(extract(epoch FROM now() - min(not_before)), 0)
     FROM deletion_outbox WHERE not_before <= now()) AS deletion_age,
  lag.*
FROM (
  SELECT coalesce(max(s.head - c.acked), 0) AS lag_max,
         coalesce(sum(s.head - c.acked), 0) AS lag_sum,
         count(*) FILTER (WHERE s.head - c.acked >= $1) AS lagging_0,
         count(*) FILTER (WHERE s.head - c.acked >= $2) AS lagging_1,
         count(*) FILTER (WHERE s.head - c.acked >= $3) AS lagging_2
  FROM consumers AS c JOIN streams AS s ON s.id = c.stream
  WHERE NOT s.closed AND NOT s.erased
) AS lag
"""


@dataclass(frozen=True)
class OutboxBacklog:
    depth: int
    oldest_age_seconds: float


@dataclass(frozen=True)
class StoreFigures:
    inputs: OutboxBacklog
    deletions: OutboxBacklog
    lag_max: int
    lag_sum: int
    lagging: dict[int, int]
    """Consumers at least `threshold` records behind, by threshold (`LAG_THRESHOLDS`)."""


class StoreGauges:
    def __init__(self, pool: asyncpg.Pool) -> None:
        self._pool = pool

    async def read(self, timeout: float) -> StoreFigures:
        row = await self._pool.fetchrow(_FIGURES, *LAG_THRESHOLDS, timeout=timeout)
        assert row is not None
        return StoreFigures(
            inputs=OutboxBacklog(row["input_depth"], float(row["input_age"])),
            deletions=OutboxBacklog(row["deletion_depth"], float(row["deletion_age"])),
            lag_max=int(row["lag_max"]), lag_sum=int(row["lag_sum"]),
            lagging={threshold: row[f"lagging_{n}"]
                     for n, threshold in enumerate(LAG_THRESHOLDS)})
