"""Network faults injected under load, with the history checker run after each (issue 11):
the LISTEN connection silently partitioned (fault 4) and a flood of hostile connections
(fault 9). Same load, nodes and table as `test_faults.py`; the checker decides, and no
timing is asserted (the stall is printed).
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import asyncpg
import pytest

from adapters.postgres.bus import LISTEN_APPLICATION_NAME
from tests.chaos.load import Load
from tests.chaos.test_faults import ENV, SECONDS, Node, _report, database
from tests.http.server import token
from tests.integration.blackhole_proxy import BlackholeProxy
from tests.pg import pg_template

__all__ = ["database", "pg_template"]

pytestmark = pytest.mark.postgres

DEADLINE = 60.0


async def _listen_pids(admin: asyncpg.Connection) -> set[int]:
    rows = await admin.fetch("SELECT pid FROM pg_stat_activity WHERE datname = "
                             "current_database() AND application_name = $1",
                             LISTEN_APPLICATION_NAME)
    return {row["pid"] for row in rows}


async def test_a_silently_partitioned_listen_connection_opens_no_gap(
        database: str, tmp_path: Path) -> None:
    # Only the LISTEN connections go through the proxy (`RUNNEL_LISTEN_DATABASE_URL`): the
    # pools keep talking to Postgres, so the partition is the listener's alone. The proxy
    # runs on this loop, so the (blocking) server starts go to a thread.
    proxy = BlackholeProxy(database)
    env = {**ENV, "RUNNEL_DATABASE_URL": database,
           "RUNNEL_LISTEN_DATABASE_URL": await proxy.start()}
    nodes = [await asyncio.to_thread(Node, env, tmp_path / f"node{n}") for n in range(2)]
    admin = await asyncpg.connect(database)
    stalled = 0.0
    try:
        load = Load([node.server.api for node in nodes], token("acme"), "acme")
        await load.create()

        async def partition() -> None:
            nonlocal stalled
            cut = await _listen_pids(admin)
            began = time.monotonic()
            # Packets dropped both ways, no FIN, no RST: only the heartbeat can tell.
            assert proxy.blackhole() == len(nodes) == len(cut)
            while len(await _listen_pids(admin) - cut) < len(nodes):
                assert time.monotonic() - began < DEADLINE, "LISTEN never came back"
                await asyncio.sleep(0.05)
            stalled = time.monotonic() - began

        anomalies = await load.run_for(SECONDS, partition)
    finally:
        await admin.close()
        for node in nodes:
            await asyncio.to_thread(node.stop)
        await proxy.close()
    _report("LISTEN connections silently partitioned (blackholed)", load, anomalies,
            f"{stalled:.2f} s to a new LISTEN")
