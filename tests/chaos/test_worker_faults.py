"""`kill -9` of a worker mid-claim, under load (fault 8).

The load appends to an input stream on a `runnel serve` without workers; two `runnel
worker` processes deliver its records to a webhook (each request answered after a short
pause, so claims are in flight most of the time). Once the doomed worker holds claims it
has not settled, it is killed with SIGKILL; the other takes its rows over when their
leases lapse. What must hold: the checker finds the append history clean, and every
stored record is delivered at least once, always under the same event id
(`input_event_id`) and carrying the record stored at its sequence. The rescue latency
(from the kill to the last stranded row delivered) is printed.
"""

from __future__ import annotations

import asyncio
import os
import signal
import time
from collections.abc import AsyncIterator
from pathlib import Path

import asyncpg
import pytest
from aiohttp import web

from domain.identifiers import StreamKey, input_event_id
from tests.chaos.load import Load
from tests.chaos.test_faults import ENV, SECONDS, _report, database
from tests.http.server import RunnelServer, token
from tests.integration.webhook_receiver import Receiver
from tests.integration.worker_processes import start_worker
from tests.pg import pg_template

__all__ = ["database", "pg_template"]

pytestmark = pytest.mark.postgres

DEADLINE = 90.0
LEASE_SECONDS = 2
PAUSE_SECONDS = 0.01
"""How long the webhook takes to answer each delivery."""


@pytest.fixture
async def receiver() -> AsyncIterator[Receiver]:
    found = Receiver()

    async def slowly(request: web.Request) -> web.Response:
        await asyncio.sleep(PAUSE_SECONDS)
        return await found.handle(request)

    app = web.Application()
    app.router.add_post("/hook", slowly)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    found.url = f"http://127.0.0.1:{runner.addresses[0][1]}/hook"
    try:
        yield found
    finally:
        await runner.cleanup()


_OPEN_CLAIMS = ("SELECT sequence FROM input_deliveries WHERE claimed_by = $1 AND NOT done "
                "AND NOT dead")


async def test_kill_9_of_a_worker_mid_claim_delivers_every_input_once_or_more(
        database: str, tmp_path: Path, receiver: Receiver) -> None:
    settings = {"wait_service": "webhook", "webhook_url": receiver.url,
                "webhook_secret": receiver.secret,
                "delivery_lease_seconds": str(LEASE_SECONDS)}
    server, workers = await asyncio.gather(
        asyncio.to_thread(RunnelServer.start, {**ENV, "RUNNEL_DATABASE_URL": database},
                          tmp_path / "node"),
        asyncio.gather(*(start_worker(database, tmp_path / f"worker{n}", **settings)
                         for n in range(2))))
    doomed = workers[0]
    doomed_id = f"{os.uname().nodename}:{doomed.pid}"
    admin = await asyncpg.connect(database)
    rescued, stranded = 0.0, 0
    watcher: asyncio.Task[None] | None = None
    try:
        load = Load([server.api], token("acme"), "acme", stream="in",
                    pins={"direction": "input"})
        await load.create()

        async def rescue(left: set[int], killed: float) -> None:
            nonlocal rescued
            while await admin.fetchval("SELECT count(*) FROM input_deliveries WHERE "
                                       "sequence = ANY($1::bigint[]) AND NOT done",
                                       list(left)):
                assert time.monotonic() - killed < DEADLINE, "stranded rows never rescued"
                await asyncio.sleep(0.05)
            rescued = time.monotonic() - killed

        async def kill_mid_claim() -> None:
            nonlocal stranded, watcher
            began = time.monotonic()
            while not await admin.fetch(_OPEN_CLAIMS, doomed_id):
                assert time.monotonic() - began < DEADLINE, "the worker never claimed"
                await asyncio.sleep(0.01)
            os.kill(doomed.pid, signal.SIGKILL)
            killed = time.monotonic()
            await doomed.wait()
            left = {row["sequence"] for row in await admin.fetch(_OPEN_CLAIMS, doomed_id)}
            stranded = len(left)
            watcher = asyncio.create_task(rescue(left, killed))

        anomalies = await load.run_for(SECONDS, kill_mid_claim)
        assert watcher is not None
        await watcher
        head = max(r["sequence"] for e in load.history if e["kind"] == "final"
                   for r in e["records"])
        began = time.monotonic()
        while await admin.fetchval("SELECT count(*) FROM input_deliveries WHERE NOT done"):
            assert time.monotonic() - began < DEADLINE, "inputs left undelivered"
            await asyncio.sleep(0.1)
    finally:
        await admin.close()
        for worker in workers:
            if worker.returncode is None:
                worker.send_signal(signal.SIGTERM)
                await asyncio.wait_for(worker.wait(), DEADLINE)
        server.stop()

    key = StreamKey("acme", load.run, load.stream)
    stored = {r["sequence"]: r["key"] for e in load.history if e["kind"] == "final"
              for r in e["records"]}
    delivered: dict[str, set[str]] = {}
    for (event_id, body), answered in zip(receiver.requests, receiver.events, strict=True):
        assert event_id == body["event_id"] == input_event_id(key, body["sequence"])
        assert answered.event_id == event_id
        delivered.setdefault(event_id, set()).add(body["record"]["payload"]["key"])
    expected = {input_event_id(key, sequence): {stored[sequence]} for sequence in stored}
    assert delivered == expected  # every record, each id always with its own record
    assert set(receiver.accepted) == set(expected)
    assert receiver.refused == []
    print(f"\n{len(receiver.requests) - len(expected)} deliveries repeated of {head}; "
          f"{stranded} rows stranded by the kill")
    _report("kill -9 of a worker mid-claim (input delivery)", load, anomalies,
            f"{rescued:.2f} s rescue ({stranded} stranded)")
