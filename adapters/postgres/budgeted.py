"""Every wait on a pool connection ends by the open store budget (ADR 0059).

Rules:
- a wait's bound is its own (`command_timeout`, the acquire bound) or what is left of
  the request's budget (`application/store_budget.py`), whichever is shorter;
- with the budget spent, no connection is taken (`TimeoutError`, an outage); a
  statement on a connection already held, and giving the connection back, still get
  `FLOOR_SECONDS`, so a transaction can roll back and a healthy connection go back to
  the pool, while one whose server does not answer is dropped by then;
- a statement that reached its bound was sent and may still commit: whoever
  answers says so (503 `store_unavailable`, retry with the same idempotency keys).
"""

from __future__ import annotations

import time
from typing import Any

import asyncpg

from application.store_budget import store_deadline

FLOOR_SECONDS = 0.1


def within_budget(own: float | None) -> float | None:
    """The bound of taking a connection now: `own`, or the budget's rest when shorter."""
    deadline = store_deadline()
    if deadline is None:
        return own
    left = deadline - time.monotonic()
    if left <= 0:
        raise TimeoutError("the request's budget for the database is spent")
    return left if own is None else min(own, left)


def held_bound(own: float | None) -> float | None:
    """The bound of a statement on a held connection, or of giving it back: `own`, or the
    budget's rest when shorter, but never under `FLOOR_SECONDS`."""
    deadline = store_deadline()
    if deadline is None:
        return own
    left = max(deadline - time.monotonic(), FLOOR_SECONDS)
    return left if own is None else min(own, left)


class BudgetedConnection(asyncpg.Connection):  # type: ignore[misc]
    """A pool connection whose statements (BEGIN and COMMIT too) end by the budget."""

    def _bound(self, timeout: float | None) -> float | None:
        if store_deadline() is None:
            return timeout
        # The caller's bound, else the pool's per-statement one (`command_timeout`).
        return held_bound(self._config.command_timeout if timeout is None else timeout)

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
