"""Every wait on a pool connection ends by the open store budget (ADR 0059).

Rules:
- a wait's bound is its own (`command_timeout`, the acquire bound) or what is left of
  the request's budget (`application/store_budget.py`), whichever is shorter; with
  the budget spent, a wait is not begun (`TimeoutError`, an outage);
- a statement that reached its bound was sent and may still commit: whoever
  answers says so (503 `store_unavailable`, retry with the same idempotency keys);
- giving a connection back waits at least `RELEASE_FLOOR_SECONDS`, so a healthy
  connection is kept even when its request used up the budget, and one whose
  cancelled statement the server has not confirmed is dropped by then.
"""

from __future__ import annotations

import time
from typing import Any

import asyncpg

from application.store_budget import store_deadline

RELEASE_FLOOR_SECONDS = 0.1


def within_budget(own: float | None) -> float | None:
    """The bound of a wait starting now: `own`, or the budget's rest when shorter."""
    deadline = store_deadline()
    if deadline is None:
        return own
    left = deadline - time.monotonic()
    if left <= 0:
        raise TimeoutError("the request's budget for the database is spent")
    return left if own is None else min(own, left)


def release_bound() -> float | None:
    """How long giving a connection back may take (None: the pool's own bound)."""
    deadline = store_deadline()
    if deadline is None:
        return None
    return max(deadline - time.monotonic(), RELEASE_FLOOR_SECONDS)


class BudgetedConnection(asyncpg.Connection):  # type: ignore[misc]
    """A pool connection whose statements (BEGIN and COMMIT too) end by the budget."""

    def _bound(self, timeout: float | None) -> float | None:
        if timeout is not None or store_deadline() is None:
            return timeout
        return within_budget(self._config.command_timeout)  # the pool's per-statement bound

    async def execute(self, query: str, *args: Any, timeout: float | None = None) -> Any:
        return await super().execute(query, *args, timeout=self._bound(timeout))

    async def executemany(self, command: str, args: Any, *,
                          timeout: float | None = None) -> Any:
        return await super().executemany(command, args, timeout=self._bound(timeout))

    async def fetch(self, query: str, *args: Any, timeout: float | None = None,
                    record_class: Any = None) -> Any:
        return await super().fetch(query, *args, timeout=self._bound(timeout),
                                   record_class=record_class)

    async def fetchval(self, query: str, *args: Any, column: int = 0,
                       timeout: float | None = None) -> Any:
        return await super().fetchval(query, *args, column=column, timeout=self._bound(timeout))

    async def fetchrow(self, query: str, *args: Any, timeout: float | None = None,
                       record_class: Any = None) -> Any:
        return await super().fetchrow(query, *args, timeout=self._bound(timeout),
                                      record_class=record_class)
