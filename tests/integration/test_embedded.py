"""The embedded default: a real Postgres under the data directory.

Proves: it starts with a `runnel` database, never as root, and a crash stop
(`pg_ctl stop -m immediate`: no shutdown checkpoint, recovery from WAL at the
next start) while appends flow loses no append that was acknowledged.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
from pathlib import Path

import asyncpg
import psutil
import pytest

from adapters.postgres import PostgresAdapters, open_postgres
from adapters.postgres.embedded import start_embedded
from adapters.postgres.embedded_attachments import ATTACHED_FILE, Attachments
from tests.embedded_dirs import embedded_dir
from tests.integration.support import DEADLINE, RUN, WRITER, definition, service_on

__all__ = ["embedded_dir"]

pytestmark = pytest.mark.postgres


async def close_after_crash(adapters: PostgresAdapters) -> None:
    try:
        await asyncio.wait_for(adapters.close(), 10)
    except (TimeoutError, OSError):
        adapters.pool.terminate()


async def test_a_crash_restart_of_the_embedded_server_loses_no_acknowledged_append(
        embedded_dir: Path) -> None:
    data_dir = embedded_dir
    server = await asyncio.to_thread(start_embedded, data_dir)
    try:
        assert server.dsn.split("?")[0].endswith("/runnel")
        assert (data_dir / "pgdata" / "PG_VERSION").exists()
        if os.geteuid() == 0:
            assert server.pid is not None
            assert psutil.Process(server.pid).username() != "root"

        adapters = await open_postgres(server.dsn)
        service = service_on(adapters)
        await service.definitions.create(WRITER, RUN, definition("s", credit={
            "max_unread_items": 100_000}))
        acknowledged: dict[int, int] = {}

        async def produce() -> None:
            n = 0
            with contextlib.suppress(Exception):  # the server goes away under us
                while True:
                    result = await service.appender.append(
                        WRITER, RUN, "s", [{"payload": n, "idempotency_key": f"k{n}"}])
                    acknowledged[n] = result.sequences[0]
                    n += 1

        producer = asyncio.create_task(produce())
        async with asyncio.timeout(DEADLINE):
            while len(acknowledged) < 50:
                assert not producer.done(), "appends failed before the crash"
                await asyncio.sleep(0.01)
        await asyncio.to_thread(server.stop, "immediate")
        await asyncio.wait_for(producer, DEADLINE)
        await close_after_crash(adapters)

        server = await asyncio.to_thread(start_embedded, data_dir)
        adapters = await open_postgres(server.dsn)
        try:
            service = service_on(adapters)
            records = (await service.reading.read(WRITER, RUN, "s", after=0,
                                                  limit=1000)).page.records
        finally:
            await adapters.close()
    finally:
        await asyncio.to_thread(server.stop)

    stored = {record.payload: record.sequence for record in records}
    assert len(acknowledged) >= 50
    for n, sequence in acknowledged.items():
        assert stored.get(n) == sequence, f"acknowledged append {n} was lost"
    assert [record.sequence for record in records] == list(range(1, len(records) + 1))


async def test_two_handles_in_one_process_the_last_to_let_go_stops_the_server(
        embedded_dir: Path) -> None:
    """ADR 0052: `stop()` detaches; the cluster stops with its last live handle."""
    data_dir = embedded_dir
    first = await asyncio.to_thread(start_embedded, data_dir)
    second = await asyncio.to_thread(start_embedded, data_dir)
    try:
        assert first.pid == second.pid
        await asyncio.to_thread(first.stop)
        connection = await asyncpg.connect(second.dsn)
        assert await connection.fetchval("SELECT 1") == 1
        await connection.close()
        postmaster = psutil.Process(second.pid)
    finally:
        await asyncio.to_thread(second.stop)
    assert not postmaster.is_running() or postmaster.status() == psutil.STATUS_ZOMBIE


async def test_the_data_directory_lists_nothing_to_others(embedded_dir: Path) -> None:
    """ADR 0053: 0700; under root 0711, so that the server's own user passes through to
    `pgdata` (its, 0700), although the package opens every parent to everyone."""
    data_dir = embedded_dir
    server = await asyncio.to_thread(start_embedded, data_dir)
    try:
        mode = data_dir.stat().st_mode & 0o777
        assert mode == (0o711 if os.geteuid() == 0 else 0o700)
        assert (data_dir / "pgdata").stat().st_mode & 0o077 == 0
        assert (data_dir / "pgdata.attached").stat().st_mode & 0o777 == 0o600
    finally:
        await asyncio.to_thread(server.stop)


def test_an_entry_of_a_dead_or_reused_pid_counts_for_nobody(tmp_path: Path) -> None:
    """A killed process's entry, or one whose pid now names another process (same pid, a
    later start), is dropped: it neither keeps the cluster up nor is kept in the file."""
    me = psutil.Process()
    (tmp_path / ATTACHED_FILE).write_text(json.dumps([
        {"pid": me.pid, "started": me.create_time() - 3600, "handle": "reused"},
        {"pid": 2**22 + 1, "started": 0.0, "handle": "dead"},  # above Linux's pid_max
    ]))
    attachments = Attachments(tmp_path)
    with attachments.locked():
        mine = attachments.add()
        assert [e["handle"] for e in json.loads((tmp_path / ATTACHED_FILE).read_text())] == [
            mine]
        other = attachments.add()
        assert attachments.remove(mine) == 1
        assert attachments.remove(other) == 0
