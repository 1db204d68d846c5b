"""What the Postgres integration tests share: a service on Postgres adapters, principals,
stream definitions, and a way to run a small script as a separate OS process."""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path
from typing import Any

import asyncpg

from adapters.clock import SystemClock
from adapters.postgres import PostgresAdapters
from application.follow_frames import EndFrame, RecordFrame
from application.follow_loop import OpenFollow
from application.node import NodeSettings
from application.service import RunnelService
from domain.principal import Principal
from entrypoints.testing.simulation import simulation

TENANT = "t1"
RUN = "run-1"
WRITER = Principal("writer", TENANT, frozenset({"streams:read", "streams:write"}))
REPO = Path(__file__).resolve().parents[2]
DEADLINE = 60.0  # an upper bound for an outcome to arrive; never asserted as a duration


def service_on(adapters: PostgresAdapters, node: NodeSettings | None = None) -> RunnelService:
    """The whole application on Postgres adapters (objects and the workflow in memory)."""
    return simulation(node, SystemClock(), backend=adapters).service


def definition(stream_id: str, **pins: Any) -> dict[str, Any]:
    return {"stream_id": stream_id, "content_class": "output.text", **pins}


async def follow_to_end(follow: OpenFollow) -> list[int]:
    """Every record sequence a follow yields, until the stream's end frame."""
    seen: list[int] = []
    try:
        async for frame in follow.frames():
            if isinstance(frame, RecordFrame):
                seen.append(frame.record.sequence)
            elif isinstance(frame, EndFrame):
                return seen
    finally:
        await follow.close()
    raise AssertionError("the follow loop ended without an end frame")


async def spawn(module: str, *args: str) -> asyncio.subprocess.Process:
    """Run `python -m module args…` from the repository root as a separate OS process."""
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return await asyncio.create_subprocess_exec(
        sys.executable, "-m", module, *args, cwd=REPO, env=env,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)


async def backend_waiting_for_a_lock(connection: asyncpg.Connection, statement_like: str) -> int:
    """The pid of a backend of this database waiting for a lock in a statement
    `LIKE statement_like`, once there is one. Every poll takes a fresh statistics
    snapshot: inside a transaction, pg_stat_activity is otherwise read once and then
    repeated, so a backend that starts waiting later would never show."""
    async with asyncio.timeout(DEADLINE):
        while True:
            await connection.execute("SELECT pg_stat_clear_snapshot()")
            pid: int | None = await connection.fetchval(
                "SELECT pid FROM pg_stat_activity WHERE datname = current_database() "
                "AND wait_event_type = 'Lock' AND query LIKE $1 LIMIT 1", statement_like)
            if pid is not None:
                return pid
            await asyncio.sleep(0.01)
