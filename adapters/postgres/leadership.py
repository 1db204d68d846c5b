"""The region's maintenance leader: a session-level advisory lock on a connection of its
own (ADR 0032).

Rules:
- the lock is `pg_try_advisory_lock(UPKEEP_LOCK_CLASS, hashtext(region))`, in the two-key
  space (which never meets the one-key locks of migrations and runs), one per region:
  each region has its own leader, as each region's workers touch only its streams;
- it lives on a dedicated connection, never a pool connection (pool connections keep no
  session state), held as long as that session lives: a leader that dies, or whose
  session the server ends, releases it with no one cleaning up;
- every `lead()` of the leader proves its session alive (`SELECT 1`, bounded); a session
  that fails is dropped, and the next attempt takes a fresh connection and tries again,
  so a leader that lost its session competes again like anyone else;
- a follower keeps its connection and tries the lock on each call; an outage is an
  answer of "not leading", never an error of the loop;
- calls are serialized: every led sweep of the process asks from its own task, and two
  statements at once on the one session would fail it (and so drop the lead).
"""

from __future__ import annotations

import asyncio
import logging

import asyncpg

from adapters.postgres.pool import DatabaseBounds, is_outage

UPKEEP_LOCK_CLASS = 0x55504B50  # "UPKP"

_TRY = "SELECT pg_try_advisory_lock($1::int4, hashtext($2))"

log = logging.getLogger("runnel.leadership")


class PostgresLeadership:
    """Implements `Leadership`."""

    def __init__(self, dsn: str, region: str, bounds: DatabaseBounds | None = None) -> None:
        self._dsn = dsn
        self._region = region
        self._bounds = bounds or DatabaseBounds()
        self._connection: asyncpg.Connection | None = None
        self._leading = False
        self._asking = asyncio.Lock()

    @property
    def leading(self) -> bool:
        return self._leading

    async def lead(self) -> bool:
        async with self._asking:
            return await self._lead()

    async def _lead(self) -> bool:
        try:
            connection = await self._connected()
            if self._leading:
                await connection.fetchval("SELECT 1", timeout=self._bounds.command_timeout)
                return True
            self._leading = bool(await connection.fetchval(
                _TRY, UPKEEP_LOCK_CLASS, self._region, timeout=self._bounds.command_timeout))
            if self._leading:
                log.info("this process now leads upkeep of region %s", self._region)
            return self._leading
        except Exception as error:
            if not (is_outage(error) or isinstance(error, asyncpg.InterfaceError)):
                raise
            if self._leading:
                log.warning("lost the upkeep lead of region %s (%s: %s)", self._region,
                            type(error).__name__, error)
            await self._drop()
            return False

    async def _connected(self) -> asyncpg.Connection:
        if self._connection is None or self._connection.is_closed():
            if self._leading:
                log.warning("lost the upkeep lead of region %s (its session ended)",
                            self._region)
            self._leading = False
            self._connection = await asyncpg.connect(
                self._dsn, timeout=self._bounds.connect_timeout_seconds,
                command_timeout=self._bounds.command_timeout,
                server_settings={"application_name": "runnel-upkeep-leader",
                                 **self._bounds.server_settings()})
        return self._connection

    async def _drop(self) -> None:
        connection, self._connection, self._leading = self._connection, None, False
        if connection is not None:
            connection.terminate()

    async def close(self) -> None:
        connection, self._connection, self._leading = self._connection, None, False
        if connection is not None and not connection.is_closed():
            try:
                await connection.close(timeout=self._bounds.connect_timeout_seconds)
            except Exception:  # closing is best effort: the server drops the lock anyway
                connection.terminate()
