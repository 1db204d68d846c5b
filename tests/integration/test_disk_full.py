"""A full disk in the middle of a group commit: every unit of work of the group fails
with `StoreFull` and none of them is stored, on both of the committer's paths (the
optimistic one-statement write and the locked transaction); the next group, once
space is back, commits as if nothing had happened.

The disk is made "full" by a trigger that raises SQLSTATE 53100 (`disk_full`) on
every record row, exactly what Postgres raises when it cannot extend a table file
(the real thing, a tablespace on a full filesystem, is `tests/chaos/test_pg_faults.py`).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from datetime import UTC, datetime

import asyncpg
import pytest

from adapters.postgres import PostgresAdapters, open_postgres
from adapters.postgres.group_commit.unit_of_work import PostgresSession
from application.ports.errors import StoreFull
from application.ports.records import StoredRecord
from domain.definition import build_definition
from domain.identifiers import StreamKey
from domain.records import draft_from_wire
from domain.stream import Stream
from tests.integration.support import DEADLINE
from tests.pg import pg_dsn, pg_template  # noqa: F401  (fixtures)

pytestmark = pytest.mark.postgres

NOW = datetime(2026, 1, 1, tzinfo=UTC)

_FULL = """
CREATE FUNCTION disk_full() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN RAISE EXCEPTION 'could not extend file: No space left on device'
      USING ERRCODE = 'disk_full'; END $$;
CREATE TRIGGER disk_full BEFORE INSERT ON records
    FOR EACH ROW EXECUTE FUNCTION disk_full();
"""


@pytest.fixture
async def pg(pg_dsn: str) -> AsyncIterator[PostgresAdapters]:  # noqa: F811
    adapters = await open_postgres(pg_dsn, migrate=False, commit_connections=1)
    yield adapters
    await adapters.close()


async def _stream(adapters: PostgresAdapters, name: str) -> StreamKey:
    key = StreamKey("t", "r", name)
    raw = {"stream_id": name, "content_class": "output.text",
           "credit": {"max_unread_items": 100_000}}
    await adapters.store.create(Stream.start(key, build_definition(raw, "local"), NOW))
    return key


async def _append(adapters: PostgresAdapters, key: StreamKey, payload: str) -> int:
    """One append as the API does it (`transact`: optimistic first, maybe locked)."""

    async def work(session: PostgresSession) -> int:
        plan = session.stream.plan_append([draft_from_wire({"payload": payload,
                                                            "idempotency_key": payload}, ())],
                                          await session.receipts([payload]))
        session.stream.append(plan)
        (sequence, draft), = plan.new
        session.add_records([StoredRecord.from_draft(sequence, draft, NOW)])
        return sequence

    result: int = await adapters.store.transact(key, work)
    return result


async def _held_committer(adapters: PostgresAdapters, key: StreamKey,
                          release: asyncio.Event, inside: asyncio.Event) -> None:
    async with adapters.store.lock(key):
        inside.set()
        await release.wait()


@pytest.mark.parametrize("optimistic", [True, False], ids=["optimistic", "locked"])
async def test_a_full_disk_fails_every_unit_of_work_of_its_group_and_stores_none(
        pg: PostgresAdapters, pg_dsn: str, optimistic: bool) -> None:  # noqa: F811
    pg.store.committer.optimistic = optimistic
    keys = [await _stream(pg, name) for name in ("a", "b")]
    blocker = await _stream(pg, "blocker")
    for key in keys:  # known to this process, so a group may be decided optimistically
        assert await _append(pg, key, f"{key.stream_id}-first") == 1
    admin = await asyncpg.connect(pg_dsn)
    try:
        await admin.execute(_FULL)
        release, inside = asyncio.Event(), asyncio.Event()
        holder = asyncio.create_task(_held_committer(pg, blocker, release, inside))
        await inside.wait()
        # Queued behind the only committer, these four become one group.
        appends = [asyncio.create_task(_append(pg, key, f"{key.stream_id}-{n}"))
                   for n in range(2) for key in keys]
        async with asyncio.timeout(DEADLINE):
            while pg.store.committer.waiting < len(appends):
                await asyncio.sleep(0.001)
        failed_before = pg.store.committer.stats.failed_groups
        release.set()
        await holder
        results = await asyncio.gather(*appends, return_exceptions=True)
        assert all(isinstance(result, StoreFull) for result in results), results
        assert all(isinstance(result.__cause__, asyncpg.exceptions.DiskFullError)
                   for result in results if isinstance(result, BaseException))
        assert pg.store.committer.stats.failed_groups == failed_before + 1
        assert await admin.fetchval("SELECT count(*) FROM records") == 2  # the two firsts
        await admin.execute("DROP TRIGGER disk_full ON records")
    finally:
        await admin.close()
    # Space is back: the same keys append, at the sequences nothing consumed.
    assert [await _append(pg, key, f"{key.stream_id}-0") for key in keys] == [2, 2]
    assert (await pg.store.load(keys[0])).head == 2  # type: ignore[union-attr]
