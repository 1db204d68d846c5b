"""Re-driving dead letters over HTTP and from `runnel deliveries redrive` (ADR 0057): admins
of the stream's tenant only, input streams only, each re-drive shown in the deliveries
view; on a server running its workers, a re-driven record is delivered again."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import httpx

from domain.identifiers import StreamKey, input_event_id
from tests.http.server import RunnelServer, bearer, token
from tests.http.support import GUARD_SECONDS, append, assert_problem, create_stream
from tests.integration.webhook_receiver import Receiver, receiver
from tests.pg import pg_dsn, pg_template

__all__ = ["pg_dsn", "pg_template", "receiver"]

ADMIN = ("streams:admin",)
REPO = Path(__file__).resolve().parents[2]


def tenant() -> str:
    return f"tenant-{uuid.uuid4().hex[:10]}"


def client(server: RunnelServer, secret: str) -> httpx.AsyncClient:
    return httpx.AsyncClient(base_url=server.api, headers=bearer(secret), timeout=30)


def redrive_path(run_id: str, stream_id: str) -> str:
    return f"/runs/{run_id}/streams/{stream_id}/deliveries/redrive"


async def eventually(condition: Callable[[], Awaitable[bool]]) -> None:
    async def poll() -> None:
        while not await condition():
            await asyncio.sleep(0.05)

    await asyncio.wait_for(poll(), GUARD_SECONDS)


async def test_only_an_admin_of_the_tenant_redrives_an_input_streams_dead_letters(
        server: RunnelServer) -> None:
    name = tenant()
    async with client(server, token(tenant=name)) as api:
        await create_stream(api, "run", "in", direction="input")
        await create_stream(api, "run", "out")
        await append(api, "run", "in", ["approve"])  # no wait service here: stays pending
    path = redrive_path("run", "in")
    refusals = [
        (token(tenant=name), 403, "forbidden"),
        (token(tenant=name, scopes=("streams:read",)), 403, "forbidden"),
        (token(tenant=tenant(), scopes=ADMIN), 404, "not_found"),
        (token(tenant=name, scopes=ADMIN, runs=("other",)), 404, "not_found"),
    ]
    for secret, status, code in refusals:
        async with client(server, secret) as caller:
            assert_problem(await caller.post(path, json={}), status, code)
    async with httpx.AsyncClient(base_url=server.api) as anonymous:
        assert_problem(await anonymous.post(path, json={}), 401, "unauthenticated")
    async with client(server, token(tenant=name, scopes=ADMIN)) as admin:
        problem = assert_problem(await admin.post(redrive_path("run", "out"), json={}), 409,
                                 "not_an_input_stream")
        assert "output stream" in problem["detail"]
        for body in ({"sequences": []}, {"sequences": [0]}, {"sequences": ["one"]},
                     {"sequences": list(range(1, 1002))}, {"sequence": [1]}):
            assert_problem(await admin.post(path, json=body), 400, "invalid_request")
        answer = await admin.post(path, json={"sequences": [1, 7]})  # pending, and nothing
        assert answer.status_code == 200, answer.text
        assert answer.json() == {"run_id": "run", "stream_id": "in", "redriven": [],
                                 "not_dead": [1, 7], "not_retained": [], "dead_letter_count": 0}
        view = (await admin.get("/runs/run/streams/in/deliveries")).json()
        assert (view["pending"], view["redrives"]) == (1, [])  # a no-op is not recorded
        erased = await admin.delete("/runs/run")
        assert erased.status_code == 200, erased.text
        assert_problem(await admin.post(path, json={}), 410, "run_erased")


def run_cli(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    env.pop("RUNNEL_TOKEN", None)
    return subprocess.run([sys.executable, "-m", "entrypoints.commands", *args], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=GUARD_SECONDS)


async def test_a_redriven_dead_letter_is_delivered_again_and_the_redrive_is_shown(
        pg_dsn: str, tmp_path: Path, receiver: Receiver) -> None:
    receiver.statuses = [500]  # the first delivery fails, and one attempt is all it gets
    env = {"RUNNEL_DATABASE_URL": pg_dsn, "RUNNEL_STORAGE": "postgres",
           "RUNNEL_SWEEP_SECONDS": "0.05", "RUNNEL_WAIT_SERVICE": "webhook",
           "RUNNEL_WEBHOOK_URL": receiver.url, "RUNNEL_WEBHOOK_SECRET": receiver.secret,
           "RUNNEL_DELIVERY_MAX_ATTEMPTS": "1", "RUNNEL_KEEPALIVE_SECONDS": "1"}
    server = await asyncio.to_thread(RunnelServer.start, env, tmp_path / "server", True)
    name = tenant()
    key = StreamKey(name, "run", "in")
    admin_token = token(tenant=name, sub="ops", scopes=ADMIN)
    try:
        async with client(server, token(tenant=name)) as api:
            await create_stream(api, "run", "in", direction="input")
            await append(api, "run", "in", ["approve", "ship"])
            view_path = "/runs/run/streams/in/deliveries"

            async def settled() -> bool:
                view: dict[str, Any] = (await api.get(view_path)).json()
                return bool(view["pending"] == 0 and view["dead_letter_count"] == 1)

            await eventually(settled)  # 1 dead, and 2 delivered all the same
            assert receiver.accepted == [input_event_id(key, 2)]

            refused = await asyncio.to_thread(
                run_cli, "deliveries", "redrive", "--run", "run", "--stream", "in",
                "--url", server.url, "--token", token(tenant=name))
            assert refused.returncode == 1 and "403 forbidden" in refused.stderr

            done = await asyncio.to_thread(
                run_cli, "deliveries", "redrive", "--run", "run", "--stream", "in",
                "--url", server.url, "--token", admin_token)
            assert done.returncode == 0, done.stderr
            assert "re-driven 1" in done.stdout and "dead letters left: 0" in done.stdout

            async def delivered_again() -> bool:
                return input_event_id(key, 1) in receiver.accepted

            await eventually(delivered_again)
            view = (await api.get(view_path)).json()
            assert (view["pending"], view["dead_letter_count"], view["dead_letters"]) == (
                0, 0, [])
            [redrive] = view["redrives"]
            assert (redrive["by"], redrive["sequences"]) == ("ops", [1])
            assert redrive["at"].startswith("20")

            again = await asyncio.to_thread(
                run_cli, "deliveries", "redrive", "--run", "run", "--stream", "in",
                "--sequence", "1", "--url", server.url, "--token", admin_token)
            assert again.returncode == 0, again.stderr
            assert "re-driven none" in again.stdout and "left alone): 1" in again.stdout
            assert len((await api.get(view_path)).json()["redrives"]) == 1
    finally:
        await asyncio.to_thread(server.stop)
