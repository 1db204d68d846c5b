"""`runnel serve` with its workers (the default): retention answers 410 to pruned cursors,
and input records the workflow keeps refusing end as dead letters in the stream status and
the metrics."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from pathlib import Path

import httpx

from tests.http.server import RunnelServer, bearer, token
from tests.http.support import GUARD_SECONDS, append, assert_problem, create_stream
from tests.integration.webhook_receiver import Receiver, receiver  # noqa: F401  (fixture)
from tests.pg import pg_dsn, pg_template  # noqa: F401  (fixtures)


async def eventually(condition: Callable[[], Awaitable[bool]]) -> None:
    async def poll() -> None:
        while not await condition():
            await asyncio.sleep(0.05)

    await asyncio.wait_for(poll(), GUARD_SECONDS)


async def test_workers_prune_and_dead_letter_inside_the_api_process(
        pg_dsn: str, tmp_path: Path, receiver: Receiver) -> None:  # noqa: F811
    receiver.statuses = [500] * 100
    env = {"RUNNEL_DATABASE_URL": pg_dsn, "RUNNEL_STORAGE": "postgres",
           "RUNNEL_SWEEP_SECONDS": "0.05", "RUNNEL_WAIT_SERVICE": "webhook",
           "RUNNEL_WEBHOOK_URL": receiver.url, "RUNNEL_DELIVERY_MAX_ATTEMPTS": "1"}
    server = await asyncio.to_thread(RunnelServer.start, env, tmp_path, True)
    try:
        async with httpx.AsyncClient(base_url=server.api, headers=bearer(token()),
                                     timeout=30) as api:
            await create_stream(api, "run-w", "kept", retention={"max_records": 1})
            await append(api, "run-w", "kept", [1, 2, 3])
            await create_stream(api, "run-w", "in", direction="input")
            await append(api, "run-w", "in", ["approve"])

            async def pruned() -> bool:
                stream = (await api.get("/runs/run-w/streams/kept")).json()
                return bool(stream["status"]["earliest"] == 3)

            async def dead_lettered() -> bool:
                stream = (await api.get("/runs/run-w/streams/in")).json()
                return bool(stream["status"]["dead_letters"] == 1)

            await eventually(pruned)
            assert_problem(await api.get("/runs/run-w/streams/kept/records"), 410,
                           "cursor_pruned")
            page = (await api.get("/runs/run-w/streams/kept/records",
                                  params={"after": "2"})).json()
            assert [record["payload"] for record in page["records"]] == [3]
            await eventually(dead_lettered)
            assert len(receiver.requests) == 1
            metrics = (await api.get(server.url + "/metrics")).text
            assert "runnel_input_dead_letters_total 1.0" in metrics
    finally:
        await asyncio.to_thread(server.stop)
