"""Outbox rows claimed with a lease: the one rule both outboxes claim by (`deletions.py`,
`outbox.py`).

Rules:
- every claim statement binds the worker as `$1`, the caller's `now` as `$2` and the
  lease's seconds as `$3`, and the node's region last (`claim`);
- a row is free when it has no lease or its lease has run out by `now` (`free`), so a dead
  worker's rows come back when its lease expires; `now` is the caller's clock, so leases
  follow the application's time, not the database's;
- a claim picks free rows `FOR UPDATE SKIP LOCKED` (workers never wait on nor share a row)
  and leases them (`LEASED`: `claimed_by` the worker, `lease_until` `now` + the seconds);
- the claim asserts, in its own statement, that the node's region is not fenced
  (`fences.py`): a fenced node claims nothing.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

import asyncpg

from adapters.postgres.fences import refused_when_fenced

LEASED = "claimed_by = $1, lease_until = $2 + make_interval(secs => $3)"
"""The SET list that leases a row to the worker `$1` until `$2` + `$3` seconds."""

RELEASED = "claimed_by = NULL, lease_until = NULL"
"""The SET list that gives a row's lease back (a settled or postponed row)."""


def free(alias: str) -> str:
    """True for a row of `alias` that no live lease covers at `$2`."""
    return f"({alias}.lease_until IS NULL OR {alias}.lease_until <= $2)"


async def claim(pool: asyncpg.Pool, statement: str, region: str, worker: str, now: datetime,
                lease_seconds: float, *args: Any) -> Sequence[asyncpg.Record]:
    """Run a claim statement: `$1`–`$3` as above, then `args`, then the region."""
    with refused_when_fenced(region):
        rows: Sequence[asyncpg.Record] = await pool.fetch(
            statement, worker, now, float(lease_seconds), *args, region)
    return rows
