"""Runnel and real DBOS on one Postgres server, both directions (ADR 0043).

In: input records appended over HTTP reach a DBOS workflow's `recv` loop exactly once and
in order, while one of two dispatching servers is killed with -9 mid-delivery and the other
takes its claims over. Out: a workflow killed with -9 mid-run and recovered by DBOS leaves
exactly one copy of each durable chunk; a retried step's live chunks carry the higher
attempt. DBOS runs in a process of its own (`tests/dbos/workflows.py`) so it can be killed.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import threading
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from queue import Empty, Queue
from typing import Any

import asyncpg
import httpx
import pytest
import pytest_asyncio
from runnel_client import AsyncRunnelClient, LiveEvent
from runnel_client.dbos_ids import run_of, workflow_id_for

from domain.identifiers import StreamKey, input_event_id
from tests.http.server import RunnelServer, bearer, token
from tests.http.support import GUARD_SECONDS, create_stream
from tests.pg import create_database, drop_database, pg_dsn, pg_template  # noqa: F401

ROOT = Path(__file__).resolve().parents[2]
TENANT = "t1"


class DbosApp:
    """`tests/dbos/workflows.py` in a process of its own; `result()` waits for its answer."""

    def __init__(self, system_database_url: str, command: str, args: dict[str, Any]) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-m", "tests.dbos.workflows", system_database_url, command,
             json.dumps(args)], stdout=subprocess.PIPE, text=True, cwd=ROOT)
        self._lines: Queue[dict[str, Any]] = Queue()
        threading.Thread(target=self._read, daemon=True).start()
        assert self._next(GUARD_SECONDS) == {"ready": True}

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self._lines.put(json.loads(line))

    def _next(self, timeout: float) -> dict[str, Any]:
        try:
            return self._lines.get(timeout=timeout)
        except Empty:
            raise AssertionError(f"the DBOS app said nothing within {timeout} s") from None

    def result(self) -> Any:
        return self._next(GUARD_SECONDS * 2)["result"]

    def kill(self) -> None:
        self.process.kill()
        self.process.wait()


@pytest_asyncio.fixture
async def dbos_database() -> AsyncIterator[str]:
    dsn = await create_database(prefix="runnel_dbos")
    try:
        yield dsn
    finally:
        await drop_database(dsn)


@pytest.fixture
def dbos_apps() -> Iterator[list[DbosApp]]:
    apps: list[DbosApp] = []
    yield apps
    for app in apps:
        if app.process.poll() is None:
            app.kill()


def test_the_workflow_id_names_one_run_of_one_tenant() -> None:
    # ':' is in the id alphabet, so a ':' join would send ("a:b", "c") and ("a", "b:c") to one
    # workflow; '/' is not, so they stay apart.
    assert workflow_id_for("a:b", "c") != workflow_id_for("a", "b:c")
    assert workflow_id_for("t1", "r") != workflow_id_for("t2", "r")
    assert run_of(workflow_id_for("acme", "r:1.x")) == ("acme", "r:1.x")
    for bad in ("acme", "/run", "acme/", "a/b/c"):
        with pytest.raises(ValueError):
            run_of(bad)


async def _notifications(dbos_dsn: str, workflow_id: str) -> int:
    connection = await asyncpg.connect(dbos_dsn)
    try:
        return int(await connection.fetchval(
            "SELECT count(*) FROM dbos.notifications WHERE destination_uuid = $1", workflow_id))
    finally:
        await connection.close()


async def test_input_records_reach_the_workflow_once_in_order_across_a_killed_dispatcher(
        pg_dsn: str, dbos_database: str, dbos_apps: list[DbosApp],  # noqa: F811
        tmp_path: Path) -> None:
    run_id, count = "run-in", 40
    workflow_id = workflow_id_for(TENANT, run_id)
    dbos_apps.append(await asyncio.to_thread(DbosApp, dbos_database, "inputs", {
        "workflow_id": workflow_id, "stream_id": "prompts", "count": count}))
    env = {"RUNNEL_DATABASE_URL": pg_dsn, "RUNNEL_STORAGE": "postgres",
           "RUNNEL_WAIT_SERVICE": "dbos", "RUNNEL_DBOS_DATABASE_URL": dbos_database,
           "RUNNEL_DELIVERY_LEASE_SECONDS": "1", "RUNNEL_SWEEP_SECONDS": "0.05"}
    doomed = await asyncio.to_thread(RunnelServer.start, env, tmp_path / "a", True)
    survivor = await asyncio.to_thread(RunnelServer.start, env, tmp_path / "b", True)
    try:
        async with httpx.AsyncClient(base_url=doomed.api, headers=bearer(token(TENANT)),
                                     timeout=30) as api:
            await create_stream(api, run_id, "prompts", direction="input")
            for index in range(count):
                response = await api.post(f"/runs/{run_id}/streams/prompts/records",
                                          json={"records": [{"payload": {"n": index}}]})
                assert response.status_code == 201, response.text
                if index == count // 4:
                    doomed.process.kill()  # mid-delivery: its claims wait out their lease
                    doomed.process.wait()
                    api.base_url = httpx.URL(survivor.api)
        events = await asyncio.to_thread(dbos_apps[0].result)
    finally:
        await asyncio.to_thread(survivor.stop)
        await asyncio.to_thread(doomed.stop)
    key = StreamKey(TENANT, run_id, "prompts")
    assert [sequence for sequence, _, _ in events] == list(range(1, count + 1))
    assert [event_id for _, event_id, _ in events] == [
        input_event_id(key, sequence) for sequence in range(1, count + 1)]
    assert [record["payload"] for _, _, record in events] == [{"n": n} for n in range(count)]
    assert await _notifications(dbos_database, workflow_id) == count  # received once each


async def test_a_workflow_killed_mid_run_and_recovered_keeps_one_copy_of_each_chunk(
        pg_dsn: str, dbos_database: str, dbos_apps: list[DbosApp],  # noqa: F811
        tmp_path: Path) -> None:
    run_id, turns, chunks = "run-out", 3, 6
    server = await asyncio.to_thread(RunnelServer.start, {
        "RUNNEL_DATABASE_URL": pg_dsn, "RUNNEL_STORAGE": "postgres"}, tmp_path)
    try:
        async with httpx.AsyncClient(base_url=server.api, headers=bearer(token(TENANT)),
                                     timeout=30) as api:
            await create_stream(api, run_id, "answer")
            args = {"workflow_id": workflow_id_for(TENANT, run_id), "url": server.url,
                    "token": token(TENANT), "run_id": run_id, "stream_id": "answer",
                    "turns": turns, "chunks": chunks, "pause": 0.1}
            first = await asyncio.to_thread(DbosApp, dbos_database, "produce", args)
            dbos_apps.append(first)

            async def stored() -> int:
                page = (await api.get(f"/runs/{run_id}/streams/answer")).json()
                return int(page["status"]["head"])

            while await stored() < chunks + 3:  # inside the second turn
                await asyncio.sleep(0.02)
            first.kill()
            second = await asyncio.to_thread(DbosApp, dbos_database, "resume",
                                             {"workflow_id": args["workflow_id"]})
            dbos_apps.append(second)
            assert await asyncio.to_thread(second.result) == turns
            records = (await api.get(f"/runs/{run_id}/streams/answer/records",
                                     params={"limit": 1000})).json()["records"]
    finally:
        await asyncio.to_thread(server.stop)
    payloads = [record["payload"] for record in records]
    chunk_positions = [(p["turn"], p["index"]) for p in payloads if "index" in p]
    assert chunk_positions == [(turn, index) for turn in range(turns) for index in range(chunks)]
    assert [p["turn"] for p in payloads if p.get("done")] == list(range(turns))
    assert len(records) == turns * (chunks + 1)


async def test_a_retried_steps_live_chunks_carry_the_higher_attempt(
        pg_dsn: str, dbos_database: str, dbos_apps: list[DbosApp],  # noqa: F811
        tmp_path: Path) -> None:
    run_id = "run-retry"
    server = await asyncio.to_thread(RunnelServer.start, {
        "RUNNEL_DATABASE_URL": pg_dsn, "RUNNEL_STORAGE": "postgres"}, tmp_path)
    seen: list[LiveEvent] = []
    try:
        async with AsyncRunnelClient(server.url, token(TENANT)) as client:
            await client.create_stream(run_id, {"stream_id": "answer",
                                                "content_class": "output.text"})

            async def follow() -> None:
                async for item in client.follow(run_id, "answer", live=True):
                    if isinstance(item, LiveEvent):
                        seen.append(item)
                    else:
                        return

            follower = asyncio.create_task(follow())
            await asyncio.sleep(0.5)  # the subscription is open before the first chunk
            app = await asyncio.to_thread(DbosApp, dbos_database, "retry", {
                "workflow_id": workflow_id_for(TENANT, run_id), "url": server.url,
                "token": token(TENANT), "run_id": run_id, "stream_id": "answer"})
            dbos_apps.append(app)
            assert await asyncio.to_thread(app.result) == 2
            await asyncio.wait_for(follower, GUARD_SECONDS)
    finally:
        await asyncio.to_thread(server.stop)
    attempts = [event.attempt for event in seen]
    assert attempts and set(attempts) == {1, 2}, attempts
    assert all(event.attempt == 2 for event in seen[attempts.index(2):])
    assert [event.chunk for event in seen if event.attempt == 2] == [
        f"attempt-2-{index}" for index in range(3)]
