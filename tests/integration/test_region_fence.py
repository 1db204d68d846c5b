"""The region write fence over real Postgres (ADR 0016): once a region is fenced, its
node stores nothing, whichever path the write takes, until the fence is lifted.

The adapters of a node of region `us` stand for that node; an `eu` node on the same
database stands for the region failed over to. The fence is recorded on a separate
connection, as `runnel fence` does.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta

import asyncpg
import pytest

from adapters.postgres import PostgresAdapters, open_postgres
from adapters.postgres.fences import fence_of, fence_region, unfence_region
from application.node import NodeSettings
from application.ports.streams import StreamSession
from application.service import RunnelService
from domain.errors import RegionFenced
from domain.identifiers import RunKey
from tests.integration.support import (
    DEADLINE,
    RUN,
    TENANT,
    WRITER,
    backend_waiting_for_a_lock,
    definition,
    service_on,
)
from tests.pg import pg_dsn, pg_template  # noqa: F401  (fixtures)

pytestmark = pytest.mark.postgres

NOW = datetime(2026, 1, 1, tzinfo=UTC)
KEY = RunKey(TENANT, RUN).stream("s")


@pytest.fixture
async def us(pg_dsn: str) -> AsyncIterator[PostgresAdapters]:  # noqa: F811
    adapters = await open_postgres(pg_dsn, region="us", migrate=False, listen=False)
    yield adapters
    await adapters.close()


@pytest.fixture
async def admin(pg_dsn: str) -> AsyncIterator[asyncpg.Connection]:  # noqa: F811
    connection = await asyncpg.connect(pg_dsn)
    yield connection
    await connection.close()


def node(adapters: PostgresAdapters, region: str = "us") -> RunnelService:
    return service_on(adapters, NodeSettings(region=region))


async def records(admin: asyncpg.Connection) -> int:
    return int(await admin.fetchval("SELECT count(*) FROM records"))


async def append(service: RunnelService, payload: object) -> tuple[int, ...]:
    return (await service.appender.append(WRITER, RUN, "s", [{"payload": payload}])).sequences


async def test_fences_count_their_epoch_and_an_unfence_keeps_it(
        admin: asyncpg.Connection) -> None:
    assert await fence_of(admin, "us") is None
    assert await unfence_region(admin, "us") is None  # never fenced: nothing to lift
    assert (await fence_region(admin, "us")).epoch == 1
    lifted = await unfence_region(admin, "us")
    assert lifted is not None and (lifted.fenced, lifted.epoch) == (False, 1)
    again = await fence_region(admin, "us")
    assert (again.fenced, again.epoch) == (True, 2)
    assert (await fence_region(admin, "us")).epoch == 3  # each fence counts
    assert await fence_of(admin, "eu") is None


async def test_an_optimistic_group_of_a_fenced_region_stores_nothing_and_is_not_retried(
        us: PostgresAdapters, admin: asyncpg.Connection) -> None:
    service = node(us)
    await service.definitions.create(WRITER, RUN, definition("s"))
    assert await append(service, 1) == (1,)
    stats = us.store.committer.stats
    assert stats.optimistic_groups >= 1  # the node holds the stream: its next group is optimistic
    await fence_region(admin, "us")

    with pytest.raises(RegionFenced) as refused:
        await append(service, 2)
    assert refused.value.extra == {"region": "us", "epoch": 1}
    calls: list[int] = []

    async def close(session: StreamSession) -> bool:
        calls.append(session.stream.version)
        return session.stream.close()

    with pytest.raises(RegionFenced):
        await us.store.transact(KEY, close)
    assert len(calls) == 1  # refused as decided, not run again under the lock
    assert (stats.fenced_groups, stats.conflicts, stats.failed_groups) == (2, 0, 0)
    assert await records(admin) == 1
    loaded = await us.store.load(KEY)
    assert loaded is not None and (loaded.head, loaded.closed) == (1, False)

    await unfence_region(admin, "us")
    assert await append(service, 3) == (2,)
    assert await records(admin) == 2


async def test_a_locked_group_of_a_fenced_region_stores_nothing(
        us: PostgresAdapters, admin: asyncpg.Connection) -> None:
    us.store.committer.optimistic = False
    service = node(us)
    await service.definitions.create(WRITER, RUN, definition("s", consumers=["ui"]))
    assert await append(service, 1) == (1,)
    await fence_region(admin, "us")

    with pytest.raises(RegionFenced):
        await append(service, 2)
    with pytest.raises(RegionFenced):
        await service.acknowledger.ack(WRITER, RUN, "s", "ui", 1)
    with pytest.raises(RegionFenced):
        async with us.store.lock(KEY) as session:  # the port's `lock()`: the caller's body
            session.stream.close()
    stats = us.store.committer.stats
    assert (stats.fenced_groups, stats.failed_groups) == (3, 0)
    assert await records(admin) == 1
    row = await admin.fetchrow("SELECT head, closed FROM streams")
    assert row is not None and (row["head"], row["closed"]) == (1, False)
    assert await admin.fetchval("SELECT acked FROM consumers WHERE consumer_id = 'ui'") == 0

    await unfence_region(admin, "us")
    assert await append(service, 3) == (2,)
    assert await service.acknowledger.ack(WRITER, RUN, "s", "ui", 2) is not None


async def test_a_group_in_flight_when_the_fence_is_recorded_is_stopped_at_its_commit(
        us: PostgresAdapters, admin: asyncpg.Connection) -> None:
    service = node(us)
    await service.definitions.create(WRITER, RUN, definition("s"))
    inside, release = asyncio.Event(), asyncio.Event()

    async def close_later() -> None:
        async with us.store.lock(KEY) as session:
            session.stream.close()
            inside.set()
            await release.wait()

    task = asyncio.create_task(close_later())
    await asyncio.wait_for(inside.wait(), DEADLINE)
    # The group holds its row lock but has written nothing yet: the fence does not wait.
    await asyncio.wait_for(fence_region(admin, "us"), DEADLINE)
    release.set()
    with pytest.raises(RegionFenced):
        await task
    assert await admin.fetchval("SELECT closed FROM streams") is False


async def test_a_fence_waits_for_a_write_that_passed_its_check_and_then_holds(
        us: PostgresAdapters, admin: asyncpg.Connection, pg_dsn: str) -> None:  # noqa: F811
    us.store.committer.optimistic = False
    service = node(us)
    await service.definitions.create(WRITER, RUN, definition("s"))
    written, release = asyncio.Event(), asyncio.Event()

    async def hold() -> None:
        written.set()
        await release.wait()

    us.store.committer.before_commit = hold
    appending = asyncio.create_task(append(service, 1))
    await asyncio.wait_for(written.wait(), DEADLINE)  # checked and written, not committed
    fencing = asyncio.create_task(fence_region(admin, "us"))
    observer = await asyncpg.connect(pg_dsn)
    try:
        await backend_waiting_for_a_lock(observer, "%pg_advisory_xact_lock%")
    finally:
        await observer.close()
    assert not fencing.done()
    us.store.committer.before_commit = None
    release.set()
    assert await asyncio.wait_for(appending, DEADLINE) == (1,)  # it committed before the fence
    assert (await asyncio.wait_for(fencing, DEADLINE)).epoch == 1
    with pytest.raises(RegionFenced):
        await append(service, 2)
    assert await records(admin) == 1


async def test_creates_erasures_and_worker_writes_of_a_fenced_region_store_nothing(
        us: PostgresAdapters, admin: asyncpg.Connection, pg_dsn: str) -> None:  # noqa: F811
    service = node(us)
    await service.definitions.create(WRITER, RUN, definition("s", direction="input"))
    await service.appender.append(WRITER, RUN, "s", [{"payload": n} for n in range(3)])
    (claimed, *_) = await us.outbox.claim("us-worker", NOW, 30.0, 1, "us")
    await admin.execute("INSERT INTO deletion_outbox (stream, region, object_key, not_before) "
                        "VALUES (NULL, 'us', 'orphan', $1)", NOW - timedelta(seconds=1))
    deletion_id = str(await admin.fetchval("SELECT id FROM deletion_outbox"))
    await fence_region(admin, "us")

    with pytest.raises(RegionFenced):
        await service.definitions.create(WRITER, RUN, definition("other"))
    with pytest.raises(RegionFenced):
        await us.store.mark_run_erased(RunKey(TENANT, RUN))
    lapsed = NOW + timedelta(seconds=60)  # the claim's lease is over: its head is due again
    with pytest.raises(RegionFenced):
        await us.outbox.claim("us-worker", lapsed, 30.0, 10, "us")
    for settle in (lambda: us.outbox.complete(claimed.stream, claimed.sequence),
                   lambda: us.outbox.retry(claimed.stream, claimed.sequence, "x", NOW),
                   lambda: us.outbox.dead_letter(claimed.stream, claimed.sequence, "x"),
                   lambda: us.deletions.claim("us-worker", NOW, 30.0, 10, "us"),
                   lambda: us.deletions.claim_bodies("us-worker", [("us", "orphan")], NOW, 30.0),
                   lambda: us.deletions.complete(deletion_id),
                   lambda: us.deletions.postpone(deletion_id, NOW, "x")):
        with pytest.raises(RegionFenced):
            await settle()

    assert await admin.fetchval("SELECT count(*) FROM streams") == 1
    assert await admin.fetchval("SELECT count(*) FROM erased_runs") == 0
    deliveries = await admin.fetch("SELECT sequence, claimed_by, attempts, done, dead "
                                   "FROM input_deliveries ORDER BY sequence")
    assert [tuple(row) for row in deliveries] == [(1, "us-worker", 0, False, False),
                                                  (2, None, 0, False, False),
                                                  (3, None, 0, False, False)]
    deletion = await admin.fetchrow("SELECT claimed_by, attempts FROM deletion_outbox")
    assert deletion is not None and tuple(deletion) == (None, 0)

    # The fence is the node's region, not the data's home: a node of eu taking over the
    # work of us-homed streams writes all along; the fenced one again once unfenced.
    eu = await open_postgres(pg_dsn, region="eu", migrate=False, listen=False)
    try:
        assert len(await eu.outbox.claim("eu-worker", lapsed, 30.0, 10, "us")) == 3
        assert len(await eu.deletions.claim("eu-worker", NOW, 30.0, 10, "us")) == 1
    finally:
        await eu.close()
    await unfence_region(admin, "us")
    await us.outbox.complete(claimed.stream, claimed.sequence)
    await service.definitions.create(WRITER, RUN, definition("other"))
    assert await admin.fetchval("SELECT count(*) FROM streams") == 2
