"""What an error that stops a group is: the one place that classifies them.

The fate of each kind is the table in `engine.py`; the optimistic and the locked
group (`optimistic.py`, `locked.py`) ask only these questions.
"""

from __future__ import annotations

import asyncpg

from adapters.postgres.pool import as_unavailable
from application.ports.errors import StoreUnavailable

DATABASE_ERRORS = (asyncpg.PostgresError, asyncpg.InterfaceError,
                   asyncpg.InternalClientError, OSError, TimeoutError,
                   StoreUnavailable)
"""Errors that leave the shared transaction unusable (or the connection gone)."""

_WRITE_CONFLICT = "RN001"
"""SQLSTATE of `runnel_write_conflict()` (migration 0003)."""
_CONFLICTS = (asyncpg.UniqueViolationError, asyncpg.DeadlockDetectedError)
"""Errors another writer's commit can cause."""


class GroupPoisoned(Exception):
    """A unit of work's query failed with `error`, so the shared transaction cannot
    commit."""

    def __init__(self, error: BaseException) -> None:
        super().__init__(error)
        self.error = error


def is_conflict(error: BaseException) -> bool:
    """Another writer changed a stream the group decided on without the row lock."""
    return isinstance(error, _CONFLICTS) or getattr(error, "sqlstate", None) == _WRITE_CONFLICT


def group_outage(error: BaseException) -> StoreUnavailable | None:
    """The outage `error` is, if the connection failed: then whether the group was
    written is unknown, and units that did not start would only wait on the same outage.
    A cancelled statement is not such an outage: the server answers."""
    unavailable = as_unavailable(error)
    if unavailable is None or isinstance(unavailable.__cause__, asyncpg.QueryCanceledError):
        return None
    return unavailable
