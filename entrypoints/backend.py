"""The storage a node runs on, opened and closed as one unit.

`postgres` (the default) uses `RUNNEL_DATABASE_URL`, or starts an embedded
Postgres under `RUNNEL_DATA_DIR` when none is configured and stops it on exit.
`memory` runs everything in this process (simulation: nothing survives exit,
and several processes share nothing).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass

from prometheus_client.registry import Collector

from adapters.memory.bus import MemoryWakeBus
from adapters.memory.durable_streams import MemoryFacadeCatalog
from adapters.memory.revoked_tokens import MemoryRevokedTokens
from adapters.memory.store import MemoryDeliveryOutbox, MemoryStreamStore
from adapters.memory.subscription_leases import MemorySubscriptionLeases
from adapters.memory.upkeep import MemoryLeadership, MemoryStorageUpkeep
from application.durable_catalog import FacadeCatalog
from application.ports import (
    DeletionOutbox,
    DeliveryOutbox,
    GapEvidence,
    Leadership,
    RecordReader,
    RevokedTokens,
    StorageUpkeep,
    StreamStore,
    SubscriptionLeases,
    WakeBus,
    WorkflowWaitService,
)
from entrypoints.settings import Settings


class NodeUnready(RuntimeError):
    """Why the probe says this node should take no traffic (its message says)."""


@dataclass(frozen=True)
class Backend:
    store: StreamStore
    reader: RecordReader
    gaps: GapEvidence
    bus: WakeBus
    outbox: DeliveryOutbox
    deletions: DeletionOutbox
    leases: SubscriptionLeases
    """Subscription slots: shared by every node on the same database (ADR 0018)."""
    revoked: RevokedTokens
    """The revoked-token list: shared by every node on the same database (ADR 0024)."""
    probe: Callable[[], Awaitable[None]]
    """Raises when the store cannot serve (what `/readyz` asks)."""
    notify: Callable[[str], WorkflowWaitService] | None = None
    """A NOTIFY wait service on the given channel (Postgres backends only)."""
    collectors: tuple[Collector, ...] = ()
    """What the backend adds to the node's /metrics, read at scrape time (Postgres: the
    committer, LISTEN, the pool and the store's figures; memory: nothing)."""
    refresh_metrics: Callable[[float], Awaitable[None]] | None = None
    """Reads, within the given seconds, the figures a scrape needs from the store."""
    upkeep: StorageUpkeep | None = None
    """Bounded removal of what nothing needs any more (ADR 0032)."""
    leadership: Callable[[], Leadership] | None = None
    """A new contender for the region's upkeep lead (one per process hosting workers)."""
    facade_catalog: FacadeCatalog | None = None
    """The Durable Streams facade's catalog (ADR 0041); None: the facade is not served."""


async def _always_ready() -> None:
    return None


@asynccontextmanager
async def open_backend(settings: Settings) -> AsyncIterator[Backend]:
    if settings.storage == "memory":
        yield memory_backend()
        return
    async with database_url(settings) as dsn, _postgres_backend(dsn, settings) as backend:
        yield backend


def memory_backend() -> Backend:
    bus = MemoryWakeBus()
    outbox = MemoryDeliveryOutbox()
    store = MemoryStreamStore(bus, outbox)
    return Backend(store=store, reader=store, gaps=store, bus=bus, outbox=outbox,
                   deletions=store.deletions, leases=MemorySubscriptionLeases(),
                   revoked=MemoryRevokedTokens(), probe=_always_ready,
                   upkeep=MemoryStorageUpkeep(store, outbox), leadership=MemoryLeadership,
                   facade_catalog=MemoryFacadeCatalog())


@asynccontextmanager
async def database_url(settings: Settings) -> AsyncIterator[str]:
    """The configured DSN, or an embedded Postgres's for as long as the context is open."""
    if settings.database_url is not None:
        yield settings.database_url
        return
    from adapters.postgres.embedded import start_embedded

    embedded = await asyncio.to_thread(start_embedded, settings.data_dir)
    try:
        yield embedded.dsn
    finally:
        await asyncio.to_thread(embedded.stop)


@asynccontextmanager
async def _postgres_backend(dsn: str, settings: Settings) -> AsyncIterator[Backend]:
    """Every write of the backend asserts that the node's region is not fenced, and every
    wait on the database is bounded. Without `auto_migrate`, the database must already be
    at this binary's schema."""
    from adapters.postgres import open_postgres
    from adapters.postgres.durable_streams import PostgresFacadeCatalog
    from adapters.postgres.leadership import PostgresLeadership
    from adapters.postgres.migrations import ensure_current, schema_state
    from adapters.postgres.wait_notify import PostgresNotifyWaitService
    from entrypoints.postgres_metrics import PostgresMetrics

    if not settings.auto_migrate:
        await ensure_current(dsn)
    pg = await open_postgres(dsn, region=settings.region, migrate=settings.auto_migrate,
                             listen=True, listen_dsn=settings.listen_database_url,
                             pool_size=settings.db_pool_size,
                             commit_connections=settings.db_commit_connections,
                             bounds=settings.database_bounds())

    async def probe() -> None:
        async with pg.pool.acquire() as connection:
            state = await schema_state(connection)
        if not state.current:
            raise NodeUnready(state.refusal() or "the database lacks migrations of this "
                              "binary (run `runnel migrate`)")
        if pg.bus.listen_connections == 0:
            raise NodeUnready("the LISTEN connection is down (readers would miss wakes)")

    metrics = PostgresMetrics(pg, store_figures=settings.metrics_store_figures)
    try:
        yield Backend(store=pg.store, reader=pg.reader, gaps=pg.gaps, bus=pg.bus,
                      outbox=pg.outbox, deletions=pg.deletions, leases=pg.leases,
                      revoked=pg.revoked, probe=probe,
                      notify=lambda channel: PostgresNotifyWaitService(pg.pool, channel),
                      upkeep=pg.upkeep,
                      leadership=lambda: PostgresLeadership(dsn, settings.region,
                                                            settings.database_bounds()),
                      collectors=metrics.collectors, refresh_metrics=metrics.refresh,
                      facade_catalog=PostgresFacadeCatalog(pg.pool))
    finally:
        await pg.close()
