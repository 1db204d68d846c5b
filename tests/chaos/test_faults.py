"""Faults injected under load, with the history checker run after each.

Two `runnel serve` processes share one Postgres database; 8 producers retry their
keys until acknowledged and 4 subscribers reconnect with `Last-Event-ID`, through
either node. Each test prints its row of the fault table; the checker decides, and
no timing is asserted. `make test` runs each fault once for a few seconds;
`make chaos` runs them longer (`RUNNEL_CHAOS_SECONDS`).
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Iterator
from pathlib import Path

import asyncpg
import pytest

from tests.chaos.load import HEADER, Load, row
from tests.http.server import RunnelServer, token
from tests.integration.blackhole_proxy import ProxyThread
from tests.pg import create_database, drop_database, pg_template, run_sync

__all__ = ["pg_template"]

pytestmark = pytest.mark.postgres

SECONDS = float(os.environ.get("RUNNEL_CHAOS_SECONDS", "6"))
ENV = {"RUNNEL_STORAGE": "postgres", "RUNNEL_KEEPALIVE_SECONDS": "1",
       "RUNNEL_DB_STATEMENT_TIMEOUT_SECONDS": "2", "RUNNEL_DB_ACQUIRE_TIMEOUT_SECONDS": "2",
       "RUNNEL_DB_CONNECT_TIMEOUT_SECONDS": "2", "RUNNEL_MAX_CONNECTIONS_PER_ADDRESS": "1000"}


class Node:
    """A `runnel serve` that can be killed and started again on the same port."""

    def __init__(self, env: dict[str, str], data_dir: Path) -> None:
        self._env, self._dir = env, data_dir
        self.server = RunnelServer.start(env, data_dir)
        self.port = self.server.url.rsplit(":", 1)[1]

    def kill(self) -> None:
        self.server.process.kill()
        self.server.process.wait()

    def start(self) -> None:
        self.server = RunnelServer.start(self._env, self._dir, extra_args=("--port", self.port))

    def stop(self) -> None:
        self.server.stop()


@pytest.fixture
def database(pg_template: str) -> Iterator[str]:
    dsn = run_sync(lambda: create_database(template=pg_template, prefix="runnel_chaos"))
    try:
        yield dsn
    finally:
        run_sync(lambda: drop_database(dsn))


def _nodes(dsn: str, tmp_path: Path) -> list[Node]:
    env = {**ENV, "RUNNEL_DATABASE_URL": dsn}
    return [Node(env, tmp_path / f"node{n}") for n in range(2)]


def _report(fault: str, load: Load, anomalies: list[object], recovery: str = "-") -> None:
    print(f"\n{HEADER}\n{row(fault, load, anomalies, recovery)}")  # type: ignore[arg-type]
    assert anomalies == [], anomalies
    assert load.tally.acked > 0 and load.tally.server_errors == 0


async def test_kill_9_of_a_server_several_times_loses_nothing(database: str,
                                                               tmp_path: Path) -> None:
    nodes = _nodes(database, tmp_path)
    try:
        load = Load([node.server.api for node in nodes], token("acme"), "acme")
        await load.create()

        async def kill_and_restart() -> None:
            for _ in range(2):
                await asyncio.to_thread(nodes[0].kill)
                await asyncio.sleep(SECONDS / 6)
                await asyncio.to_thread(nodes[0].start)

        anomalies = await load.run_for(SECONDS, kill_and_restart)
    finally:
        for node in nodes:
            node.stop()
    _report("kill -9 of a runnel serve (x2), two servers", load, anomalies)


async def test_terminated_listen_connections_open_no_gap(database: str,
                                                         tmp_path: Path) -> None:
    nodes = _nodes(database, tmp_path)
    stalled = 0.0
    try:
        load = Load([node.server.api for node in nodes], token("acme"), "acme")
        await load.create()

        async def terminate_listeners() -> None:
            nonlocal stalled
            admin = await asyncpg.connect(database)
            try:
                began = time.monotonic()
                await admin.fetch("SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                                  "WHERE application_name = 'runnel-listen'")
                while await admin.fetchval("SELECT count(*) FROM pg_stat_activity "
                                           "WHERE application_name = 'runnel-listen'") < 2:
                    await asyncio.sleep(0.05)
                stalled = time.monotonic() - began
            finally:
                await admin.close()

        anomalies = await load.run_for(SECONDS, terminate_listeners)
    finally:
        for node in nodes:
            node.stop()
    _report("LISTEN connections terminated", load, anomalies, f"{stalled:.2f} s")


async def test_a_paused_database_answers_503_and_loses_nothing(database: str,
                                                             tmp_path: Path) -> None:
    proxy = ProxyThread(database)
    routed = proxy.start()
    nodes = _nodes(routed, tmp_path)
    recovered = 0.0
    try:
        load = Load([node.server.api for node in nodes], token("acme"), "acme")
        await load.create()

        async def pause() -> None:
            nonlocal recovered
            proxy.pause()
            await asyncio.sleep(5)
            proxy.resume()
            began, acked = time.monotonic(), load.tally.acked
            while load.tally.acked == acked:
                await asyncio.sleep(0.05)
            recovered = time.monotonic() - began

        anomalies = await load.run_for(SECONDS + 5, pause)
    finally:
        for node in nodes:
            node.stop()
        proxy.close()
    _report("Postgres paused 5 s (every connection held, as by SIGSTOP)", load, anomalies,
            f"{recovered:.2f} s after")
