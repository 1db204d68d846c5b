"""Group commit: units of work that share one transaction stay independent.

With a single commit connection, a unit of work that waits inside its body
holds the committer, so the units queued meanwhile are run together as the
next group: that is how these tests put several units in one transaction.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from typing import Any

import asyncpg
import pytest

from adapters.postgres import PostgresAdapters, open_postgres
from adapters.postgres.group_commit.units import NestedUnitOfWork
from application.ports.errors import StoreUnavailable
from domain.definition import build_definition
from domain.errors import InvalidRecord
from domain.identifiers import StreamKey
from domain.records import draft_from_wire
from domain.stream import Stream
from tests.integration.support import DEADLINE, backend_waiting_for_a_lock
from tests.pg import pg_dsn, pg_template  # noqa: F401  (fixtures)

pytestmark = pytest.mark.postgres

NOW = datetime(2026, 1, 1, tzinfo=UTC)


class Boom(Exception):
    pass


@pytest.fixture
async def pg(pg_dsn: str) -> AsyncIterator[PostgresAdapters]:  # noqa: F811
    adapters = await open_postgres(pg_dsn, migrate=False, commit_connections=1)
    yield adapters
    await adapters.close()


async def stream(adapters: PostgresAdapters, stream_id: str) -> StreamKey:
    key = StreamKey("t", "r", stream_id)
    raw = {"stream_id": stream_id, "content_class": "output.text",
           "credit": {"max_unread_items": 100_000}}
    await adapters.store.create(Stream.start(key, build_definition(raw, "local"), NOW))
    return key


async def append(adapters: PostgresAdapters, key: StreamKey, item: dict[str, Any],
                 then: Exception | None = None) -> int:
    """One unit of work appending one record; raises `then` after staging it."""
    from adapters.postgres.group_commit.unit_of_work import PostgresSession  # noqa: F401  (type only)
    from application.ports.records import StoredRecord

    async with adapters.store.lock(key) as session:
        keys = [item["idempotency_key"]] if "idempotency_key" in item else []
        plan = session.stream.plan_append([draft_from_wire(item, ())],
                                          await session.receipts(keys) if keys else {})
        session.stream.append(plan)
        (sequence, draft), = plan.new
        session.add_records([StoredRecord.from_draft(sequence, draft, NOW)])
        if then is not None:
            raise then
    return sequence


class Blocker:
    """Holds the only committer inside a unit of work until released."""

    def __init__(self, adapters: PostgresAdapters, key: StreamKey) -> None:
        self.inside = asyncio.Event()
        self.release = asyncio.Event()
        self.task = asyncio.create_task(self._hold(adapters, key))

    async def _hold(self, adapters: PostgresAdapters, key: StreamKey) -> None:
        async with adapters.store.lock(key):
            self.inside.set()
            await self.release.wait()

    async def __aenter__(self) -> Blocker:
        await self.inside.wait()
        return self

    async def __aexit__(self, *_: object) -> None:
        self.release.set()
        await self.task


async def queued(adapters: PostgresAdapters, count: int) -> None:
    """Wait (bounded) until `count` units of work wait for the committer."""
    async with asyncio.timeout(DEADLINE):
        while adapters.store.committer.waiting < count:
            await asyncio.sleep(0.001)


async def page(adapters: PostgresAdapters, key: StreamKey) -> list[tuple[int, Any]]:
    return [(r.sequence, r.payload) for r in (await adapters.reader.read_page(key, 0, 100)
                                              ).records]


async def test_a_unit_of_work_that_fails_in_a_shared_transaction_is_undone_alone(
        pg: PostgresAdapters) -> None:
    key, elsewhere = await stream(pg, "s"), await stream(pg, "blocker")
    async with Blocker(pg, elsewhere):
        first = asyncio.create_task(append(pg, key, {"payload": "first"}))
        failing = asyncio.create_task(append(pg, key, {"payload": "never",
                                                       "idempotency_key": "k"}, then=Boom()))
        last = asyncio.create_task(append(pg, key, {"payload": "last"}))
        await queued(pg, 3)
    results = await asyncio.gather(first, failing, last, return_exceptions=True)
    assert pg.store.committer.stats.recent_sizes[-1] == 3  # one transaction for the three
    assert results[0] == 1 and isinstance(results[1], Boom) and results[2] == 2
    assert await page(pg, key) == [(1, "first"), (2, "last")]
    loaded = await pg.store.load(key)
    assert loaded is not None and (loaded.head, loaded.version) == (2, 3)
    async with pg.store.lock(key) as session:
        assert await session.receipts(["k"]) == {}


async def test_a_record_postgres_cannot_store_fails_only_its_own_unit_of_work(
        pg: PostgresAdapters) -> None:
    key, elsewhere = await stream(pg, "s"), await stream(pg, "blocker")
    async with Blocker(pg, elsewhere):
        tasks = [asyncio.create_task(append(pg, key, item)) for item in (
            {"payload": "ok"}, {"payload": float("nan")},
            {"payload": 1, "idempotency_key": "nul\x00"}, {"payload": "a\x00b"},
            {"payload": 2, "idempotency_key": "\ud800"},
            {"payload": 3, "content_type": "text/\udfff"})]
        await queued(pg, len(tasks))
    results = await asyncio.gather(*tasks, return_exceptions=True)
    assert (results[0], results[3]) == (1, 2)  # NUL inside JSON is escaped, hence storable
    refused = results[1:3] + results[4:]
    assert all(isinstance(result, InvalidRecord) for result in refused), refused
    assert await page(pg, key) == [(1, "ok"), (2, "a\x00b")]


async def test_a_database_error_fails_its_transaction_and_units_not_started_are_retried(
        pg: PostgresAdapters, pg_dsn: str) -> None:  # noqa: F811
    key, elsewhere = await stream(pg, "s"), await stream(pg, "blocker")
    admin = await asyncpg.connect(pg_dsn)
    try:
        # The middle unit's receipts query will wait on this lock until we cancel it.
        holding = admin.transaction()
        await holding.start()
        await admin.execute("LOCK TABLE append_receipts IN ACCESS EXCLUSIVE MODE")
        async with Blocker(pg, elsewhere):
            accepted = asyncio.create_task(append(pg, key, {"payload": "before"}))
            broken = asyncio.create_task(append(pg, key, {"payload": "x", "idempotency_key": "k"}))
            later = asyncio.create_task(append(pg, key, {"payload": "after"}))
            await queued(pg, 3)
        waiting = await backend_waiting_for_a_lock(admin, "%append_receipts%")
        assert await admin.fetchval("SELECT pg_cancel_backend($1)", waiting)
        await holding.rollback()
        results = await asyncio.gather(accepted, broken, later, return_exceptions=True)
    finally:
        await admin.close()
    # The first unit had finished cleanly, but its transaction could not commit; a
    # cancelled statement reaches callers as the store being unavailable (a 503).
    for failed in results[:2]:
        assert isinstance(failed, StoreUnavailable)
        assert isinstance(failed.__cause__, asyncpg.QueryCanceledError)
    assert results[2] == 1  # not started when it failed: retried in the next transaction
    assert await page(pg, key) == [(1, "after")]
    assert pg.store.committer.stats.failed_groups == 1


async def test_a_unit_of_work_cancelled_while_queued_leaves_no_trace(
        pg: PostgresAdapters) -> None:
    key, elsewhere = await stream(pg, "s"), await stream(pg, "blocker")
    async with Blocker(pg, elsewhere):
        cancelled = asyncio.create_task(append(pg, key, {"payload": "cancelled"}))
        kept = asyncio.create_task(append(pg, key, {"payload": "kept"}))
        await queued(pg, 2)
        cancelled.cancel()
    assert await kept == 1
    with pytest.raises(asyncio.CancelledError):
        await cancelled
    assert await page(pg, key) == [(1, "kept")]


async def test_two_processes_writing_many_streams_never_deadlock(pg_dsn: str) -> None:  # noqa: F811
    processes = [await open_postgres(pg_dsn, migrate=False, listen=False) for _ in range(2)]
    try:
        keys = [await stream(processes[0], f"s{n}") for n in range(4)]
        rng = random.Random(7)
        work = [(adapters, rng.choice(keys)) for adapters in processes for _ in range(150)]
        rng.shuffle(work)
        results = await asyncio.gather(*(append(adapters, key, {"payload": n})
                                         for n, (adapters, key) in enumerate(work)),
                                       return_exceptions=True)
        heads = [(await processes[0].store.load(key)).head for key in keys]  # type: ignore[union-attr]
        shared = max(max(p.store.committer.stats.recent_sizes) for p in processes)
        failures = [p.store.committer.stats.failed_groups for p in processes]
    finally:
        for adapters in processes:
            await adapters.close()
    assert [r for r in results if isinstance(r, BaseException)] == []
    assert sum(heads) == len(work) and failures == [0, 0]
    assert shared > 1  # units of work on several streams really did share transactions


async def test_a_unit_of_work_inside_another_is_refused_not_deadlocked(
        pg: PostgresAdapters) -> None:
    outer, inner = await stream(pg, "outer"), await stream(pg, "inner")
    async with pg.store.lock(outer):
        with pytest.raises(NestedUnitOfWork):
            async with pg.store.lock(inner):
                pass
    assert await append(pg, inner, {"payload": "afterwards"}) == 1
