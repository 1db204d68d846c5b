"""Postgres (asyncpg) adapters for every storage and waking port.

`open_postgres(dsn, region=…)` migrates (unless told not to), opens one pool,
starts the group committer and the process's single LISTEN connection, and
returns the adapters' bundle (`adapters.backend.Backend`, with its Postgres adapters
and pool); `close()` stops them in reverse order. Every write of
these adapters asserts that `region` (the node's) is not fenced (`fences.py`).
"""

from __future__ import annotations

from dataclasses import dataclass

import asyncpg

from adapters.backend import Backend
from adapters.postgres.bus import ListenSettings, PostgresWakeBus
from adapters.postgres.codec import AggregateCodec
from adapters.postgres.deletions import PostgresDeletionOutbox
from adapters.postgres.durable_streams import PostgresFacadeCatalog
from adapters.postgres.gaps import PostgresGapEvidence
from adapters.postgres.group_commit.engine import GroupCommitter
from adapters.postgres.group_commit.stream_cache import StreamCache
from adapters.postgres.leadership import PostgresLeadership
from adapters.postgres.migrations import migrate
from adapters.postgres.outbox import PostgresDeliveryOutbox
from adapters.postgres.pool import DatabaseBounds, open_pool
from adapters.postgres.reader import PostgresRecordReader
from adapters.postgres.revoked_tokens import REVOKED_CHANNEL, PostgresRevokedTokens
from adapters.postgres.store import PostgresStreamStore
from adapters.postgres.subscription_leases import PostgresSubscriptionLeases
from adapters.postgres.upkeep import PostgresStorageUpkeep
from adapters.postgres.wait_notify import PostgresNotifyWaitService

__all__ = ["DatabaseBounds", "PostgresAdapters", "migrate", "open_postgres"]

DEFAULT_REGION = "local"
"""The region of a node that configures none (`RUNNEL_REGION`'s default)."""

# JIT compilation only adds latency to the short statements Runnel runs.
_SERVER_SETTINGS = {"application_name": "runnel", "jit": "off"}


async def _keep_session(_connection: asyncpg.Connection) -> None:
    """Pool release without asyncpg's default reset query (one round trip per use):
    Runnel never changes session state on pool connections (no SET, LISTEN or
    session-level advisory locks), and an open transaction is still rolled back."""


@dataclass(frozen=True, kw_only=True)
class PostgresAdapters(Backend):
    """The Postgres backend: the bundle's ports as the Postgres adapters, and their pool."""

    store: PostgresStreamStore
    reader: PostgresRecordReader
    gaps: PostgresGapEvidence
    bus: PostgresWakeBus
    outbox: PostgresDeliveryOutbox
    deletions: PostgresDeletionOutbox
    leases: PostgresSubscriptionLeases
    revoked: PostgresRevokedTokens
    pool: asyncpg.Pool
    upkeep: PostgresStorageUpkeep

    async def close(self) -> None:
        await self.store.committer.close()
        await self.bus.close()
        await self.pool.close()


async def open_postgres(dsn: str, *, region: str = DEFAULT_REGION, migrate: bool = True,
                        listen: bool = True, pool_size: int = 10, commit_connections: int = 3,
                        max_group: int = 256, listen_dsn: str | None = None,
                        listen_settings: ListenSettings | None = None,
                        bounds: DatabaseBounds | None = None) -> PostgresAdapters:
    """Connect to `dsn`.

    - `listen=False` gives a process that only writes and reads (workers, CLI):
      its readers hear only its own commits, nothing from other processes;
    - `commit_connections` is how many shared transactions may be in flight at
      once (each holds one pool connection while it runs); the pool keeps at
      least two more for reads; `max_group` caps the units of work per
      transaction (1 is one transaction per command: for comparisons);
    - `listen_dsn` routes the LISTEN connection differently from the pool (a
      transaction-pooling proxy such as pgbouncer cannot carry LISTEN);
    - `region` is the node's (`RUNNEL_REGION`): its fence stops every write;
    - `bounds` bound every wait on the database (`pool.py`): past one, the adapters
      raise `StoreUnavailable`.
    """
    if migrate:
        from adapters.postgres.migrations import migrate as apply

        await apply(dsn)
    database_bounds = bounds or DatabaseBounds()
    pool = await open_pool(dsn, database_bounds,
                           max_size=max(pool_size, commit_connections + 2),
                           server_settings=_SERVER_SETTINGS, reset=_keep_session)
    codec = AggregateCodec()
    cache = StreamCache()
    revoked = PostgresRevokedTokens(pool)
    bus = PostgresWakeBus(listen_dsn or dsn, pool, listen_settings,
                          doorbells={REVOKED_CHANNEL: revoked.ring})
    committer = GroupCommitter(pool, codec, cache, origin=bus.origin,
                               on_committed=bus.deliver_committed, region=region,
                               connections=commit_connections, max_group=max_group)
    adapters = PostgresAdapters(
        store=PostgresStreamStore(pool, codec, cache, committer, region),
        reader=PostgresRecordReader(pool),
        gaps=PostgresGapEvidence(pool),
        bus=bus,
        outbox=PostgresDeliveryOutbox(pool, region),
        deletions=PostgresDeletionOutbox(pool, region),
        leases=PostgresSubscriptionLeases(pool),
        revoked=revoked,
        pool=pool,
        upkeep=PostgresStorageUpkeep(pool, region),
        leadership=lambda: PostgresLeadership(dsn, region, database_bounds),
        notify=lambda channel: PostgresNotifyWaitService(pool, channel),
        facade_catalog=PostgresFacadeCatalog(pool),
    )
    try:
        await bus.start(listen=listen)
    except BaseException:
        await adapters.close()
        raise
    return adapters
