"""One request's deadline for its work on the store (ADR 0059).

Rules:
- a use case opens the budget once per attempt at the store (`store_budget`): every
  wait of that attempt on the database (a connection, a statement, a place in a group,
  the group's commit) ends by the same deadline, whatever the wait's own bound;
- opening a budget inside another replaces it (an attempt after a wait that was not
  on the store starts afresh); None opens no deadline, so each wait keeps its own bound;
- the deadline is read by the store's adapters (`store_deadline`); a store without
  waits of its own (the in-memory one) ignores it.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

_deadline: ContextVar[float | None] = ContextVar("runnel_store_deadline", default=None)


@contextmanager
def store_budget(seconds: float | None) -> Iterator[None]:
    """The store work inside ends within `seconds` from now (None: no budget)."""
    with store_deadline_at(None if seconds is None else time.monotonic() + seconds):
        yield


@contextmanager
def store_deadline_at(deadline: float | None) -> Iterator[None]:
    """The store work inside ends by `deadline` (`time.monotonic()`; None: no budget)."""
    token = _deadline.set(deadline)
    try:
        yield
    finally:
        _deadline.reset(token)


def store_deadline() -> float | None:
    """The open budget's deadline (`time.monotonic()`), or None."""
    return _deadline.get()
