"""`runnel serve` with its workers runs storage upkeep under the region's leader (ADR 0032):
the server holds the lead, and receipts of records retention pruned are removed."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from pathlib import Path

import asyncpg
import httpx

from adapters.postgres.ids import stream_id
from domain.identifiers import StreamKey
from tests.http.server import RunnelServer, bearer, token
from tests.http.support import GUARD_SECONDS, create_stream
from tests.pg import pg_dsn, pg_template  # noqa: F401  (fixtures)


async def eventually(condition: Callable[[], Awaitable[bool]]) -> None:
    async def poll() -> None:
        while not await condition():
            await asyncio.sleep(0.05)

    await asyncio.wait_for(poll(), GUARD_SECONDS)


async def test_the_server_leads_upkeep_and_removes_receipts_of_pruned_records(
        pg_dsn: str, tmp_path: Path) -> None:  # noqa: F811
    env = {"RUNNEL_DATABASE_URL": pg_dsn, "RUNNEL_STORAGE": "postgres",
           "RUNNEL_SWEEP_SECONDS": "0.05", "RUNNEL_MAINTENANCE_SECONDS": "0.05",
           "RUNNEL_RECEIPT_MIN_SECONDS": "0"}
    server = await asyncio.to_thread(RunnelServer.start, env, tmp_path, True)
    observer = await asyncpg.connect(pg_dsn)
    try:
        async with httpx.AsyncClient(base_url=server.api, headers=bearer(token()),
                                     timeout=30) as api:
            await create_stream(api, "run-u", "kept", retention={"max_records": 2})
            for n in range(10):
                response = await api.post("/runs/run-u/streams/kept/records", json={
                    "records": [{"payload": n, "idempotency_key": f"k{n}"}]})
                assert response.status_code == 201, response.text
            stream = stream_id(StreamKey("t1", "run-u", "kept"))

            async def bounded() -> bool:
                kept = await observer.fetchval(
                    "SELECT count(*) FROM append_receipts WHERE stream = $1", stream)
                return bool(kept == 2)

            await eventually(bounded)
            leaders = await observer.fetchval(
                "SELECT count(*) FROM pg_stat_activity AS a JOIN pg_locks AS l "
                "ON l.pid = a.pid AND l.locktype = 'advisory' AND l.granted "
                "WHERE a.application_name = 'runnel-upkeep-leader' "
                "AND a.datname = current_database()")
            assert leaders == 1
            # A retried key of a retained record is still answered with its sequence.
            again = await api.post("/runs/run-u/streams/kept/records", json={
                "records": [{"payload": 9, "idempotency_key": "k9"}]})
            assert again.status_code == 200 and again.json()["sequences"] == [10]
    finally:
        await observer.close()
        await asyncio.to_thread(server.stop)
