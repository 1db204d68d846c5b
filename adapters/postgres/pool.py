"""The connection pool every Postgres adapter shares, with every wait on it bounded.

Rules:
- a statement runs for at most `statement_timeout_seconds` on the server
  (`statement_timeout`), and the client gives up a little later on its own
  (`command_timeout`): a hung server, whose connection is open but silent,
  cannot hold a caller longer than that;
- taking a connection from the pool waits at most `acquire_timeout_seconds`,
  and opening one at most `connect_timeout_seconds`;
- a session idle inside a transaction is ended by the server after
  `idle_in_transaction_seconds`, so a stuck node cannot hold a stream's row lock;
- TCP keepalives run both ways: the server probes its clients, and each pool
  connection probes the server (and gives up on unacknowledged data) after
  `keepalive_seconds`, so a dead peer is noticed without traffic;
- inside a store budget (`application/store_budget.py`), taking a connection,
  each statement and giving the connection back all end by its deadline too
  (`budgeted.py`);
- every outage (refused or lost connection, a bound reached, the server
  shutting down or out of connections, no host of a multi-host DSN writable, a
  connection that reached a read-only standby, a closed connection used again, a
  connection whose protocol state the client lost)
  leaves an `acquire()` block as `StoreUnavailable`, whatever query raised it; the
  adapters' own queries all run in such blocks (`Pool.fetch` and friends take one
  themselves). A full disk (SQLSTATE 53100) is the outage `StoreFull`: the
  statement failed, nothing of it was stored. Other database errors pass unchanged.
"""

from __future__ import annotations

import socket
from dataclasses import dataclass
from types import TracebackType
from typing import Any

import asyncpg
from asyncpg.pool import Pool

from adapters.postgres.budgeted import BudgetedConnection, held_bound, within_budget
from application.ports.errors import StoreFull, StoreUnavailable

OUTAGES: tuple[type[BaseException], ...] = (
    OSError,  # refused, reset, unreachable
    TimeoutError,  # a client-side bound
    asyncpg.PostgresConnectionError,  # SQLSTATE class 08
    asyncpg.exceptions.OperatorInterventionError,  # 57: statement timeout, shutdown
    asyncpg.exceptions.InsufficientResourcesError,  # 53: disk full, memory, connections
    # The client lost track of the connection: a server that crashed sent its FATAL
    # between two statements, or (`TargetServerAttributeNotMatched`) failing over,
    # every host of the DSN answers but none is the primary yet.
    asyncpg.exceptions.InternalClientError,
    # A write reached a hot standby (a DSN or proxy that routes to any host).
    asyncpg.exceptions.ReadOnlySQLTransactionError,
)


def is_outage(error: BaseException) -> bool:
    # A connection the server dropped, used again (e.g. to roll back), says only that.
    return isinstance(error, OUTAGES) or (isinstance(error, asyncpg.InterfaceError)
                                          and "connection is closed" in str(error))


@dataclass(frozen=True)
class DatabaseBounds:
    statement_timeout_seconds: float = 15.0
    acquire_timeout_seconds: float = 5.0
    connect_timeout_seconds: float = 5.0
    idle_in_transaction_seconds: float = 30.0
    keepalive_seconds: float = 10.0

    def server_settings(self) -> dict[str, str]:
        keepalive = max(1, int(self.keepalive_seconds))
        return {
            "statement_timeout": str(int(self.statement_timeout_seconds * 1000)),
            "idle_in_transaction_session_timeout":
                str(int(self.idle_in_transaction_seconds * 1000)),
            "tcp_keepalives_idle": str(keepalive),
            "tcp_keepalives_interval": str(max(1, keepalive // 3)),
            "tcp_keepalives_count": "3",
        }

    @property
    def command_timeout(self) -> float:
        """The client's bound: past the server's, so a live server answers first."""
        return self.statement_timeout_seconds + 2.0


class _Bounded:
    """`pool.acquire()`: a connection within the bound (and the store budget), given back
    within the budget, with outages translated; `pool.waiting` counts the callers inside
    `__aenter__` (waiting for a connection)."""

    def __init__(self, pool: BoundedPool, timeout: float) -> None:
        self._pool = pool
        self._timeout = timeout
        self._connection: asyncpg.Connection | None = None

    async def __aenter__(self) -> asyncpg.Connection:
        self._pool.waiting += 1
        try:
            self._connection = await Pool.acquire(self._pool,
                                                  timeout=within_budget(self._timeout))
            return self._connection
        except BaseException as error:
            _raise_if_outage(error)
            raise
        finally:
            self._pool.waiting -= 1

    async def __aexit__(self, kind: type[BaseException] | None, error: BaseException | None,
                        trace: TracebackType | None) -> None:
        connection, self._connection = self._connection, None
        try:
            await self._pool.release(connection, timeout=held_bound(None))
        except BaseException as releasing:
            _raise_if_outage(releasing)
            raise
        if error is not None:
            _raise_if_outage(error)

    def __await__(self) -> Any:
        return self.__aenter__().__await__()


def as_unavailable(error: BaseException) -> StoreUnavailable | None:
    """`error` as the outage it is, or None when it is not one."""
    if isinstance(error, StoreUnavailable):
        return error
    if isinstance(error, asyncpg.exceptions.DiskFullError):
        full = StoreFull(f"the database is out of disk space: {type(error).__name__}")
        full.__cause__ = error
        return full
    if is_outage(error):
        unavailable = StoreUnavailable(f"the database is unavailable: {type(error).__name__}")
        unavailable.__cause__ = error
        return unavailable
    return None


def _raise_if_outage(error: BaseException) -> None:
    unavailable = as_unavailable(error)
    if unavailable is not None and unavailable is not error:
        raise unavailable


class BoundedPool(Pool):  # type: ignore[misc]
    """asyncpg's pool, whose `acquire()` waits at most the bound and turns outages into
    `StoreUnavailable` (see the module rules)."""

    def __init__(self, *args: Any, acquire_timeout: float, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._acquire_timeout = acquire_timeout
        self.waiting = 0
        """Callers waiting for a connection right now (for the node's metrics)."""

    def acquire(self, *, timeout: float | None = None) -> Any:
        return _Bounded(self, self._acquire_timeout if timeout is None else timeout)


async def _keepalive(bounds: DatabaseBounds, connection: asyncpg.Connection) -> None:
    """Client-side TCP keepalive and user timeout on a new pool connection."""
    transport = getattr(connection, "_transport", None)  # asyncpg has no public socket
    sock = transport.get_extra_info("socket") if transport is not None else None
    if sock is None or sock.family not in (socket.AF_INET, socket.AF_INET6):
        return
    idle = max(1, int(bounds.keepalive_seconds))
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)
    for name, value in (("TCP_KEEPIDLE", idle), ("TCP_KEEPINTVL", max(1, idle // 3)),
                        ("TCP_KEEPCNT", 3), ("TCP_USER_TIMEOUT", idle * 2000)):
        option = getattr(socket, name, None)
        if option is not None:
            sock.setsockopt(socket.IPPROTO_TCP, option, value)


async def open_pool(dsn: str, bounds: DatabaseBounds, *, max_size: int,
                    server_settings: dict[str, str], reset: Any) -> BoundedPool:
    async def init(connection: asyncpg.Connection) -> None:
        await _keepalive(bounds, connection)

    pool = BoundedPool(
        dsn, acquire_timeout=bounds.acquire_timeout_seconds, connection_class=BudgetedConnection,
        record_class=asyncpg.Record, min_size=1, max_size=max_size, max_queries=50000,
        max_inactive_connection_lifetime=300.0, connect=None, setup=None, init=init,
        reset=reset, loop=None, timeout=bounds.connect_timeout_seconds,
        command_timeout=bounds.command_timeout,
        server_settings={**server_settings, **bounds.server_settings()})
    try:
        await pool
    except BaseException as error:
        _raise_if_outage(error)
        raise
    return pool
