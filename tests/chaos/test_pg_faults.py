"""Postgres itself fails under load: it crashes and restarts (fault 2), its disk fills
up (fault 6); ADR 0034.

Each test runs a cluster of its own (`cluster.py`) with two `runnel serve` on one
database, 8 producers retrying their keys until acknowledged and 4 subscribers
resuming with `Last-Event-ID`. The nodes are never restarted: they must come back by
themselves. The checker decides; the recovery time is printed, never asserted.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import os
import subprocess
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import asyncpg
import httpx
import pytest

from adapters.postgres.migrations import migrate
from tests.chaos.checker import Anomaly
from tests.chaos.cluster import Cluster, available, give_to_server_user
from tests.chaos.load import HEADER, Load, row
from tests.chaos.test_faults import ENV, SECONDS
from tests.http.server import RunnelServer, token

pytestmark = [pytest.mark.postgres,
              pytest.mark.skipif(available() is not None, reason=str(available()))]


@pytest.fixture
def cluster() -> Iterator[Cluster]:
    with Cluster.running() as own:
        yield own


@contextlib.asynccontextmanager
async def serving(dsn: str, tmp_path: Path, workers: bool = False
                  ) -> AsyncIterator[tuple[list[RunnelServer], Load]]:
    """Two nodes on `dsn` (migrated first; started side by side), and a load on both, its
    stream created."""
    await migrate(dsn)
    env = {**ENV, "RUNNEL_DATABASE_URL": dsn}
    started = await asyncio.gather(*(asyncio.to_thread(
        RunnelServer.start, env, tmp_path / f"node{n}", workers and n == 0) for n in range(2)),
        return_exceptions=True)
    nodes = [node for node in started if isinstance(node, RunnelServer)]
    try:
        for failed in started:
            if isinstance(failed, BaseException):
                raise failed
        load = Load([node.api for node in nodes], token("acme"), "acme")
        await load.create()
        yield nodes, load
    finally:
        for node in nodes:
            node.stop()


def resumed_after(load: Load, moment: float) -> float:
    """Seconds from `moment` to the first acknowledgement answered after it."""
    answers = [e["answered"] for e in load.history
               if e["kind"] == "append" and e["outcome"] == "ok" and e["answered"] > moment]
    assert answers, "no append was acknowledged after the fault"
    return min(answers) - moment


def report(fault: str, load: Load, anomalies: list[Anomaly], nodes: list[RunnelServer],
           recovery: str) -> None:
    """Print the fault's row; no anomaly, no 5xx that is not an outage said as such, and
    no crash in any node's log (a 500, or an exception that escaped into the server)."""
    print(f"\n{HEADER}\n{row(fault, load, anomalies, recovery)}")
    assert anomalies == [], anomalies
    assert load.tally.acked > 0 and load.tally.server_errors == 0
    for node in nodes:
        log = node.log.read_text()
        for crash in ("unhandled error", "Exception in ASGI application"):
            assert crash not in log, log[log.index(crash) - 200:][:4000]


async def test_a_postgres_crash_and_restart_loses_nothing_acknowledged(
        cluster: Cluster, tmp_path: Path) -> None:
    dsn = await cluster.create_database("chaos")
    async with serving(dsn, tmp_path) as (nodes, load):
        restarts: list[float] = []

        async def stop_then_crash() -> None:
            for down in (cluster.stop_immediately, cluster.crash):
                await asyncio.to_thread(down)
                await asyncio.sleep(1)
                await asyncio.to_thread(cluster.start)
                restarts.append(time.monotonic())
                await asyncio.sleep(SECONDS / 4)

        anomalies = await load.run_for(SECONDS, stop_then_crash)
    recovered = " / ".join(f"{resumed_after(load, moment):.2f} s" for moment in restarts)
    report("Postgres immediate stop, then kill -9, each restarted", load, anomalies, nodes,
           f"{recovered} after restart")


# -- fault 6: the disk fills up ----------------------------------------------

TABLESPACE_BYTES = 96 * 2**20
"""The tiny filesystem the chaos database lives on: its catalogs and Runnel's schema
take about 12 MiB; the rest is space to fill."""


class TinyFilesystem:
    """A tmpfs of its own, owned by the server's user, that can be filled to the last
    byte (`fill`) and given back (`free`)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.path.mkdir()
        mounted = subprocess.run(["mount", "-t", "tmpfs", "-o",
                                  f"size={TABLESPACE_BYTES},mode=0700", "runnel-chaos",
                                  str(path)], capture_output=True, text=True)
        if mounted.returncode != 0:
            raise PermissionError(f"mount -t tmpfs failed: {mounted.stderr.strip()}")
        give_to_server_user(path)
        (path / "tablespace").mkdir()
        give_to_server_user(path / "tablespace")
        self._ballast = path / "ballast"

    def fill(self) -> None:
        chunk = b"\0" * 2**20
        with self._ballast.open("wb", buffering=0) as ballast:
            while True:
                try:
                    ballast.write(chunk)
                except OSError as error:
                    assert error.errno == errno.ENOSPC, error
                    break
            # The last, partial MiB: byte pages until nothing fits.
            for size in (2**16, 2**12, 1):
                with contextlib.suppress(OSError):
                    while True:
                        ballast.write(b"\0" * size)

    def free(self) -> None:
        self._ballast.unlink()

    def unmount(self) -> None:
        subprocess.run(["umount", "-l", str(self.path)], check=False, capture_output=True)


def _why_no_tiny_filesystem() -> str | None:
    if os.geteuid() != 0:
        return "mounting a tmpfs for the tablespace needs root (CI runs as root)"
    return None


@pytest.fixture
def tiny(cluster: Cluster) -> Iterator[TinyFilesystem]:
    reason = _why_no_tiny_filesystem()
    if reason is not None:
        pytest.skip(reason)
    try:
        filesystem = TinyFilesystem(cluster.root / "tiny")
    except PermissionError as refused:  # root without CAP_SYS_ADMIN (a bare container)
        pytest.skip(f"cannot make a small filesystem here: {refused}")
    try:
        yield filesystem
    finally:
        cluster.destroy()  # the server lets go of the tablespace before it is unmounted
        filesystem.unmount()


async def _probe(client: httpx.AsyncClient, load: Load, key: str) -> dict[str, Any]:
    """One append of a key of its own, sent once and never retried, as an attempt of
    producer `probe`: refused with `insufficient_storage`, it must never be stored."""
    event: dict[str, Any] = {"kind": "append", "tenant": load.tenant, "stream": load.stream,
                             "producer": "probe", "key": key, "sent": time.monotonic()}
    response = await client.post(load.nodes[0] + load.path + "/records", json={"records": [
        {"payload": {"key": key, "tenant": load.tenant}, "idempotency_key": key}]})
    event["answered"] = time.monotonic()
    code = response.json().get("code") if response.status_code >= 400 else None
    if response.status_code in (200, 201):
        event |= {"outcome": "ok", "sequence": response.json()["sequences"][0]}
    elif response.status_code == 503 and code == "insufficient_storage":
        assert response.headers.get("Retry-After"), response.headers
        event |= {"outcome": "failed", "code": code}  # a definite refusal: nothing stored
    else:
        event |= {"outcome": "unknown", "code": code}
    load.history.append(event)
    return event


async def test_a_full_disk_answers_insufficient_storage_and_recovers(
        cluster: Cluster, tiny: TinyFilesystem, tmp_path: Path) -> None:
    connection = await asyncpg.connect(cluster.dsn())
    try:
        await connection.execute(
            f"CREATE TABLESPACE tiny LOCATION '{tiny.path / 'tablespace'}'")
    finally:
        await connection.close()
    dsn = await cluster.create_database("chaos", tablespace="tiny")
    async with serving(dsn, tmp_path) as (nodes, load):
        probes: list[dict[str, Any]] = []
        freed = 0.0

        async def fill_then_free() -> None:
            nonlocal freed
            await asyncio.to_thread(tiny.fill)
            deadline = time.monotonic() + 120
            async with httpx.AsyncClient(headers={"Authorization": f"Bearer {load.token}"},
                                         timeout=httpx.Timeout(30.0)) as client:
                while not any(p["outcome"] == "failed" for p in probes):
                    assert time.monotonic() < deadline, "the full disk never refused an append"
                    probes.append(await _probe(client, load, f"probe-{len(probes)}"))
                    await asyncio.sleep(0.05)
                for _ in range(5):
                    probes.append(await _probe(client, load, f"probe-{len(probes)}"))
            await asyncio.sleep(1)
            tiny.free()
            freed = time.monotonic()

        anomalies = await load.run_for(SECONDS, fill_then_free)
    # Refused probes were never retried: the checker flags any of them stored (phantom).
    assert any(p["outcome"] == "failed" for p in probes), probes
    refused = [e for e in load.history
               if e["kind"] == "append" and e.get("code") == "insufficient_storage"]
    report(f"disk full ({len(refused)} appends answered 503 insufficient_storage)", load,
           anomalies, nodes, f"{resumed_after(load, freed):.2f} s after space returned")
