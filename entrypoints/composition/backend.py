"""The Postgres storage a node runs on, opened and closed as one unit.

`RUNNEL_STORAGE=postgres` (the default) uses `RUNNEL_DATABASE_URL`, or, when none is
configured, the embedded Postgres under `RUNNEL_DATA_DIR`: started or attached to, and let
go of on exit (the last process to let go stops it, ADR 0052). `memory` opens nothing: the
container takes `adapters.memory.backend` instead (nothing survives exit, and several
processes share nothing).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import replace

from adapters.backend import Backend
from entrypoints.composition.settings import Settings


class NodeUnready(RuntimeError):
    """Why the probe says this node should take no traffic (its message says)."""


@asynccontextmanager
async def open_postgres_backend(settings: Settings) -> AsyncIterator[Backend]:
    async with database_url(settings) as dsn, _postgres_backend(dsn, settings) as backend:
        yield backend


@asynccontextmanager
async def database_url(settings: Settings) -> AsyncIterator[str]:
    """The configured DSN, or the embedded Postgres's, attached to for as long as the
    context is open (another process's use of it is never cut short)."""
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
    at this binary's schema. The node adds its readiness probe and its metrics."""
    from adapters.postgres import open_postgres
    from adapters.postgres.migrations import ensure_current, schema_state
    from entrypoints.observability.postgres_metrics import PostgresMetrics

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
        yield replace(pg, probe=probe, collectors=metrics.collectors,
                      refresh_metrics=metrics.refresh)
    finally:
        await pg.close()
