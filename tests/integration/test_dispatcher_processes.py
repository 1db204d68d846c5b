"""Input delivery across `runnel worker` processes on one database: at least once, stable
event ids, and a worker killed with SIGKILL mid-delivery is taken over after its lease."""

from __future__ import annotations

import asyncio
import os
import signal
import socket
from pathlib import Path

import asyncpg
import pytest

from adapters.postgres import open_postgres
from domain.identifiers import StreamKey, input_event_id
from tests.integration.support import DEADLINE, RUN, WRITER, definition, service_on
from tests.integration.webhook_receiver import Receiver, receiver  # noqa: F401  (fixture)
from tests.integration.worker_processes import eventually, start_worker
from tests.pg import pg_dsn, pg_template  # noqa: F401  (fixtures)

pytestmark = pytest.mark.postgres

INPUTS = 12
KEY = StreamKey(WRITER.tenant, RUN, "in")


async def input_records(dsn: str, count: int) -> None:
    adapters = await open_postgres(dsn, migrate=False, listen=False)
    try:
        service = service_on(adapters)
        await service.definitions.create(WRITER, RUN, definition("in", direction="input"))
        await service.appender.append(WRITER, RUN, "in", [{"payload": n} for n in range(count)])
    finally:
        await adapters.close()


async def stop(child: asyncio.subprocess.Process) -> None:
    if child.returncode is None:
        child.send_signal(signal.SIGTERM)
        await asyncio.wait_for(child.wait(), DEADLINE)


async def test_two_worker_processes_deliver_every_input_with_stable_ids(
        pg_dsn: str, tmp_path: Path, receiver: Receiver) -> None:  # noqa: F811
    settings = {"wait_service": "webhook", "webhook_url": receiver.url,
                "webhook_secret": receiver.secret}
    first = await start_worker(pg_dsn, tmp_path / "a", **settings)
    second = await start_worker(pg_dsn, tmp_path / "b", **settings)
    try:
        await input_records(pg_dsn, INPUTS)
        expected = {input_event_id(KEY, sequence) for sequence in range(1, INPUTS + 1)}

        async def all_accepted() -> bool:
            return set(receiver.accepted) >= expected

        await eventually(all_accepted)
        assert set(receiver.accepted) == expected  # only these ids, each at least once
        for event_id, body in receiver.requests:
            assert body["event_id"] == event_id
            assert event_id == input_event_id(KEY, body["sequence"])
            assert body["tenant"] == KEY.tenant
        assert receiver.refused == []  # every request verified with the SDK
    finally:
        await stop(first)
        await stop(second)


async def test_a_worker_killed_mid_delivery_is_taken_over_after_its_lease(
        pg_dsn: str, tmp_path: Path, receiver: Receiver) -> None:  # noqa: F811
    settings = {"wait_service": "webhook", "webhook_url": receiver.url,
                "webhook_secret": receiver.secret, "delivery_lease_seconds": "1"}
    await input_records(pg_dsn, 3)
    receiver.hang = True
    doomed = await start_worker(pg_dsn, tmp_path / "doomed", **settings)
    observer = await asyncpg.connect(pg_dsn)
    try:
        async def stuck_in_delivery() -> bool:
            return len(receiver.requests) == 1

        await eventually(stuck_in_delivery)
        claims = await observer.fetch("SELECT claimed_by, done FROM input_deliveries")
        assert {(row["claimed_by"], row["done"]) for row in claims} == {
            (f"{socket.gethostname()}:{doomed.pid}", False)}
        os.kill(doomed.pid, signal.SIGKILL)
        assert await asyncio.wait_for(doomed.wait(), DEADLINE) == -signal.SIGKILL

        receiver.hang = False
        heir = await start_worker(pg_dsn, tmp_path / "heir", **settings)
        try:
            expected = [input_event_id(KEY, sequence) for sequence in (1, 2, 3)]

            async def all_done() -> bool:
                rows = await observer.fetch("SELECT claimed_by, done FROM input_deliveries")
                return all(row["done"] for row in rows)

            await eventually(all_done)
            assert set(receiver.accepted) == set(expected)  # at least once each
            assert receiver.requests[0][0] == expected[0]  # the interrupted one, same id
            rows = await observer.fetch("SELECT claimed_by, done FROM input_deliveries")
            assert {(row["claimed_by"], row["done"]) for row in rows} == {
                (f"{socket.gethostname()}:{heir.pid}", True)}
        finally:
            await stop(heir)
    finally:
        await observer.close()
        if doomed.returncode is None:
            doomed.kill()
            await doomed.wait()
