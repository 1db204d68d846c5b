"""Postgres failover under load: the primary is killed with -9 and its synchronous
standby promoted, while two `runnel serve` connected with a multi-host DSN
(`target_session_attrs=read-write`) keep serving (ADR 0034).

What must hold, without restarting a node: the pool, the LISTEN connection and the
upkeep leader's session all reach the new primary; the checker finds nothing
acknowledged lost (a synchronous standby has every commit the primary acknowledged).
The time to resume is printed, never asserted.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from pathlib import Path

import asyncpg
import pytest

from adapters.postgres.bus import LISTEN_APPLICATION_NAME
from adapters.postgres.pool import DatabaseBounds, open_pool
from application.ports.errors import StoreUnavailable
from entrypoints.composition.settings import Settings
from entrypoints.composition.startup import StartupRefused, preflight
from tests.chaos.cluster import Cluster, available
from tests.chaos.test_faults import SECONDS
from tests.chaos.test_pg_faults import report, resumed_after, serving

pytestmark = [pytest.mark.postgres,
              pytest.mark.skipif(available() is not None, reason=str(available()))]

UPKEEP_LEADER = "runnel-upkeep-leader"


@pytest.fixture
def primary() -> Iterator[Cluster]:
    with Cluster.running() as own:
        yield own


async def _sessions(dsn: str, name: str) -> int:
    connection = await asyncpg.connect(dsn)
    try:
        return int(await connection.fetchval(
            "SELECT count(*) FROM pg_stat_activity WHERE application_name = $1", name))
    finally:
        await connection.close()


async def _until_sessions(dsn: str, name: str, count: int, deadline_seconds: float = 90
                          ) -> None:
    deadline = time.monotonic() + deadline_seconds
    while (found := await _sessions(dsn, name)) < count:
        assert time.monotonic() < deadline, f"{found} of {count} {name} sessions on {dsn}"
        await asyncio.sleep(0.2)


async def test_killing_the_primary_and_promoting_its_sync_standby_loses_nothing(
        primary: Cluster, tmp_path: Path) -> None:
    await primary.create_database("chaos")
    standby = primary.standby()
    try:
        both = (f"postgresql://postgres@127.0.0.1:{primary.port},127.0.0.1:{standby.port}"
                "/chaos?target_session_attrs=read-write")
        # The schema goes to the primary, and synchronously to the standby, through
        # the multi-host DSN itself (migrations connect with it too).
        async with serving(both, tmp_path, workers=True) as (nodes, load):
            new_primary = standby.dsn("chaos")
            killed = 0.0

            async def kill_and_promote() -> None:
                nonlocal killed
                await asyncio.to_thread(primary.crash)
                killed = time.monotonic()
                await asyncio.to_thread(standby.promote)

            anomalies = await load.run_for(SECONDS, kill_and_promote)
            # Each node's one LISTEN connection, and the upkeep leader's session (node 0
            # runs the workers), are on the new primary: nobody restarted them.
            await _until_sessions(new_primary, LISTEN_APPLICATION_NAME, len(nodes))
            await _until_sessions(new_primary, UPKEEP_LEADER, 1)
        report("Postgres primary kill -9, sync standby promoted (multi-host DSN)", load,
               anomalies, nodes, f"{resumed_after(load, killed):.2f} s after the kill")
    finally:
        standby.destroy()


async def test_while_no_host_is_writable_the_store_is_unavailable_not_refused(
        primary: Cluster) -> None:
    """Mid-failover every host may answer and none be the primary yet: the pool says
    `StoreUnavailable` (a 503), and a starting node waits for a primary instead of
    refusing its configuration; once the standby is promoted, both get through."""
    standby = primary.standby()
    try:
        only_standby = (f"postgresql://postgres@127.0.0.1:{standby.port}/postgres"
                        "?target_session_attrs=read-write")
        bounds = DatabaseBounds(connect_timeout_seconds=5)
        with pytest.raises(StoreUnavailable) as raised:
            await open_pool(only_standby, bounds, max_size=2, server_settings={}, reset=None)
        assert isinstance(raised.value.__cause__,
                          asyncpg.exceptions.TargetServerAttributeNotMatched)
        with pytest.raises(StartupRefused, match="did not answer within"):
            await preflight(Settings(database_url=only_standby, startup_timeout_seconds=1))
        await asyncio.to_thread(standby.promote)
        await preflight(Settings(database_url=only_standby, startup_timeout_seconds=30))
        pool = await open_pool(only_standby, bounds, max_size=2, server_settings={}, reset=None)
        try:
            assert await pool.fetchval("SELECT NOT pg_is_in_recovery()")
        finally:
            await pool.close()
    finally:
        standby.destroy()
