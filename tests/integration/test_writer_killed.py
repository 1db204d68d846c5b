"""A writer process killed with SIGKILL in the middle of its transaction.

The child appends a batch and is stopped for good after its transaction wrote
every row (records, events, snapshot) and before COMMIT; the test checks that
the rows really are written and uncommitted (its backend holds the write lock
on `records`, idle in transaction), then kills it. Proves: no part of the
batch is ever visible, the stream row is released, and the next append
continues densely at head + 1.
"""

from __future__ import annotations

import asyncio
import os
import signal

import asyncpg
import pytest

from adapters.postgres import open_postgres
from domain.identifiers import StreamKey
from tests.integration.support import (
    DEADLINE,
    RUN,
    WRITER,
    backend_waiting_for_a_lock,
    definition,
    service_on,
    spawn,
)
from tests.pg import pg_dsn, pg_template  # noqa: F401  (fixtures)

pytestmark = pytest.mark.postgres

# The backend that holds uncommitted rows in `records`, and what it is doing.
_UNCOMMITTED_WRITER = """
SELECT a.pid, a.state FROM pg_locks AS l JOIN pg_stat_activity AS a ON a.pid = l.pid
WHERE l.relation = 'records'::regclass AND l.mode = 'RowExclusiveLock' AND l.granted
  AND a.datname = current_database()
"""


async def test_a_writer_killed_mid_transaction_leaves_nothing_and_the_stream_goes_on(
        pg_dsn: str) -> None:  # noqa: F811
    adapters = await open_postgres(pg_dsn, migrate=False)
    observer = await asyncpg.connect(pg_dsn)
    try:
        service = service_on(adapters)
        await service.definitions.create(WRITER, RUN, definition("s"))
        before = await service.appender.append(WRITER, RUN, "s",
                                               [{"payload": n} for n in range(3)])
        assert before.sequences == (1, 2, 3)

        child = await spawn("tests.integration.writer_process", "hang-before-commit", pg_dsn,
                            "s", "5")
        assert child.stdout is not None
        line = await asyncio.wait_for(child.stdout.readline(), DEADLINE)
        assert line.decode().strip() == "WRITTEN"
        holders = await observer.fetch(_UNCOMMITTED_WRITER)
        assert [row["state"] for row in holders] == ["idle in transaction"]
        assert await observer.fetchval("SELECT count(*) FROM records") == 3

        os.kill(child.pid, signal.SIGKILL)
        assert await asyncio.wait_for(child.wait(), DEADLINE) == -signal.SIGKILL

        after = await service.appender.append(WRITER, RUN, "s",
                                              [{"payload": "next"}, {"payload": "again"}])
        assert after.sequences == (4, 5)
        page = (await service.reading.read(WRITER, RUN, "s", after=0)).page
        stream = await adapters.store.load(StreamKey(WRITER.tenant, RUN, "s"))
        rows = await observer.fetchval("SELECT count(*) FROM records")
        events = await observer.fetchval("SELECT count(*) FROM stream_events")
    finally:
        await observer.close()
        await adapters.close()

    assert [(r.sequence, r.payload) for r in page.records] == [
        (1, 0), (2, 1), (3, 2), (4, "next"), (5, "again")]
    assert stream is not None and (stream.head, stream.total_items) == (5, 5)
    assert rows == 5
    assert events == 3  # Created and two Appended: nothing of the killed batch


async def test_a_writer_killed_while_its_one_statement_waits_leaves_all_or_nothing(
        pg_dsn: str) -> None:  # noqa: F811
    """The default path: an optimistic group is one autocommit statement. The child's
    statement waits for the stream row (locked here), the child is killed, the row
    released: the server finishes or drops the statement whole, and the stream goes on
    densely."""
    adapters = await open_postgres(pg_dsn, migrate=False)
    observer = await asyncpg.connect(pg_dsn)
    try:
        service = service_on(adapters)
        await service.definitions.create(WRITER, RUN, definition("s"))
        await service.appender.append(WRITER, RUN, "s", [{"payload": n} for n in range(3)])
        holding = observer.transaction()
        await holding.start()
        await observer.execute("SELECT 1 FROM streams WHERE run_id = $1 FOR UPDATE", RUN)

        child = await spawn("tests.integration.writer_process", "batches", pg_dsn, "s", "9",
                            "1", "5")
        await backend_waiting_for_a_lock(observer, "WITH new_events AS%")
        os.kill(child.pid, signal.SIGKILL)
        assert await asyncio.wait_for(child.wait(), DEADLINE) == -signal.SIGKILL
        await holding.rollback()

        after = await service.appender.append(WRITER, RUN, "s", [{"payload": "next"}])
        page = (await service.reading.read(WRITER, RUN, "s", after=0)).page
        events = await observer.fetchval("SELECT count(*) FROM stream_events")
    finally:
        await observer.close()
        await adapters.close()

    killed = [r.payload for r in page.records if isinstance(r.payload, dict)]
    assert len(killed) in (0, 5)  # the whole batch, or none of it
    assert [r.sequence for r in page.records] == list(range(1, 3 + len(killed) + 2))
    assert after.sequences == (3 + len(killed) + 1,)
    assert events == 3 + (1 if killed else 0)  # Created, Appended, [killed batch], Appended
