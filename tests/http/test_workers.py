"""`runnel serve` with its workers (the default): retention answers 410 to pruned cursors;
input records the workflow keeps refusing end as dead letters in the stream status and the
metrics; with no wait service they stay pending, visibly, until one is configured; NOTIFY
counts as published, never as delivered."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from pathlib import Path

import asyncpg
import httpx

from tests.http.server import METRICS, RunnelServer, bearer, token
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
           "RUNNEL_WEBHOOK_URL": receiver.url, "RUNNEL_WEBHOOK_SECRET": receiver.secret,
           "RUNNEL_DELIVERY_MAX_ATTEMPTS": "1"}
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
            metrics = (await api.get(server.url + "/metrics", headers=METRICS)).text
            assert "runnel_input_dead_letters_total 1.0" in metrics
    finally:
        await asyncio.to_thread(server.stop)


NO_WAIT_SERVICE = {"RUNNEL_WAIT_SERVICE": None, "RUNNEL_WEBHOOK_URL": None}
"""Unset whatever the test runner's environment says: the default is under test."""


async def test_input_records_stay_pending_without_a_wait_service_until_one_is_configured(
        pg_dsn: str, tmp_path: Path, receiver: Receiver) -> None:  # noqa: F811
    base = {"RUNNEL_DATABASE_URL": pg_dsn, "RUNNEL_STORAGE": "postgres",
            "RUNNEL_SWEEP_SECONDS": "0.05"}
    idle = await asyncio.to_thread(RunnelServer.start, {**base, **NO_WAIT_SERVICE},
                                   tmp_path / "idle", True)
    try:
        assert "none is set (webhook, dbos or notify), so they stay pending" in idle.banner
        async with httpx.AsyncClient(base_url=idle.api, headers=bearer(token()),
                                     timeout=30) as api:
            await create_stream(api, "run-p", "in", direction="input")
            await append(api, "run-p", "in", ["approve", "reject"])
            await create_stream(api, "run-p", "kept", retention={"max_records": 1})
            await append(api, "run-p", "kept", [1, 2])

            async def swept() -> bool:  # the workers ran since the inputs were appended
                stream = (await api.get("/runs/run-p/streams/kept")).json()
                return bool(stream["status"]["earliest"] == 2)

            await eventually(swept)
            status = (await api.get("/runs/run-p/streams/in")).json()["status"]
            assert (status["pending_inputs"], status["dead_letters"]) == (2, 0)
            metrics = (await api.get(idle.url + "/metrics", headers=METRICS)).text
            assert "runnel_input_pending 2.0" in metrics
            assert 'runnel_input_wait_service{service="none"} 1.0' in metrics
            assert "runnel_input_events_delivered_total 0.0" in metrics
        rows = await fetch_deliveries(pg_dsn)
        assert rows == [(1, None, 0, False), (2, None, 0, False)]  # never claimed nor tried
    finally:
        await asyncio.to_thread(idle.stop)

    hooked = await asyncio.to_thread(
        RunnelServer.start, {**base, "RUNNEL_WAIT_SERVICE": "webhook",
                             "RUNNEL_WEBHOOK_URL": receiver.url,
                             "RUNNEL_WEBHOOK_SECRET": receiver.secret},
        tmp_path / "hooked", True)
    try:
        async with httpx.AsyncClient(base_url=hooked.api, headers=bearer(token()),
                                     timeout=30) as api:
            async def delivered() -> bool:
                stream = (await api.get("/runs/run-p/streams/in")).json()
                return bool(stream["status"]["pending_inputs"] == 0)

            await eventually(delivered)
            assert [body["record"]["payload"] for _, body in receiver.requests] == [
                "approve", "reject"]
            metrics = (await api.get(hooked.url + "/metrics", headers=METRICS)).text
            assert "runnel_input_events_delivered_total 2.0" in metrics
            assert "runnel_input_pending 0.0" in metrics
        assert [row[3] for row in await fetch_deliveries(pg_dsn)] == [True, True]
    finally:
        await asyncio.to_thread(hooked.stop)


async def test_notify_counts_input_events_as_published_not_delivered(
        pg_dsn: str, tmp_path: Path) -> None:  # noqa: F811
    listener = await asyncpg.connect(pg_dsn)
    heard: asyncio.Queue[str] = asyncio.Queue()
    await listener.add_listener("runnel_test_inputs", lambda *args: heard.put_nowait(args[3]))
    env = {"RUNNEL_DATABASE_URL": pg_dsn, "RUNNEL_STORAGE": "postgres",
           "RUNNEL_SWEEP_SECONDS": "0.05", "RUNNEL_WAIT_SERVICE": "notify",
           "RUNNEL_NOTIFY_CHANNEL": "runnel_test_inputs"}
    server = await asyncio.to_thread(RunnelServer.start, env, tmp_path, True)
    try:
        assert "wait service (RUNNEL_WAIT_SERVICE): NOTIFY on 'runnel_test_inputs'" in server.banner
        async with httpx.AsyncClient(base_url=server.api, headers=bearer(token()),
                                     timeout=30) as api:
            await create_stream(api, "run-n", "in", direction="input")
            await append(api, "run-n", "in", ["go"])
            event = json.loads(await asyncio.wait_for(heard.get(), GUARD_SECONDS))
            assert (event["sequence"], event["record"]["payload"]) == (1, "go")

            async def counted() -> bool:
                return "runnel_input_events_published_total 1.0" in (
                    await api.get(server.url + "/metrics", headers=METRICS)).text

            await eventually(counted)
            metrics = (await api.get(server.url + "/metrics", headers=METRICS)).text
            assert "runnel_input_events_delivered_total 0.0" in metrics
            assert 'runnel_input_wait_service{service="notify"} 1.0' in metrics
    finally:
        await asyncio.to_thread(server.stop)
        await listener.close()


async def fetch_deliveries(dsn: str) -> list[tuple[int, str | None, int, bool]]:
    connection = await asyncpg.connect(dsn)
    try:
        rows = await connection.fetch("SELECT sequence, claimed_by, attempts, done "
                                      "FROM input_deliveries ORDER BY sequence")
    finally:
        await connection.close()
    return [(row["sequence"], row["claimed_by"], row["attempts"], row["done"]) for row in rows]


async def test_the_workers_delete_an_expired_stream(pg_dsn: str,  # noqa: F811
                                                    tmp_path: Path) -> None:
    env = {"RUNNEL_DATABASE_URL": pg_dsn, "RUNNEL_STORAGE": "postgres",
           "RUNNEL_SWEEP_SECONDS": "0.05"}
    server = await asyncio.to_thread(RunnelServer.start, env, tmp_path, True)
    try:
        async with httpx.AsyncClient(base_url=server.api, headers=bearer(token()),
                                     timeout=30) as api:
            await create_stream(api, "run-x", "brief", expires_after_seconds=1)
            await create_stream(api, "run-x", "kept")
            await append(api, "run-x", "brief", [1, 2])
            connection = await asyncpg.connect(pg_dsn)
            try:
                async def swept() -> bool:
                    row = await connection.fetchrow(
                        "SELECT erased, earliest, head FROM streams WHERE tenant = 't1' "
                        "AND run_id = 'run-x' AND stream_id = 'brief'")
                    assert row is not None
                    return bool(row["erased"])

                await eventually(swept)  # the server's clock: one second, then a sweep
                rows = await connection.fetchval(
                    "SELECT count(*) FROM records r JOIN streams s ON s.id = r.stream "
                    "WHERE s.run_id = 'run-x'")
            finally:
                await connection.close()
            assert rows == 0
            assert_problem(await api.get("/runs/run-x/streams/brief"), 404, "not_found")
            assert (await api.get("/runs/run-x/streams/kept")).status_code == 200
    finally:
        await asyncio.to_thread(server.stop)
