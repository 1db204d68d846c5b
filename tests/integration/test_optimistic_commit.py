"""Optimistic groups: decided on the state a process holds, written only if still current.

Two adapter sets on one database stand for two Runnel processes. Each keeps the
states it last committed or read; when the other process writes a stream in
between, the first one's held state is stale, and its next group must not
commit anything decided on it.
"""

from __future__ import annotations

import asyncio

import asyncpg
import pytest

from adapters.postgres import PostgresAdapters, open_postgres
from adapters.postgres.group_commit.units import NestedUnitOfWork, StoreClosed
from application.ports.streams import StreamSession
from application.service import RunnelService
from domain.errors import Backpressure
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


async def sequences(service: RunnelService, stream_id: str) -> list[int]:
    page = await service.reading.read(WRITER, RUN, stream_id, 0, 1000)
    return [record.sequence for record in page.page.records]


async def test_a_stream_another_process_wrote_is_decided_again_under_the_lock(
        writers: tuple[PostgresAdapters, PostgresAdapters]) -> None:
    first, second = writers
    a, b = service_on(first), service_on(second)
    await a.definitions.create(WRITER, RUN, definition("s"))
    assert (await a.appender.append(WRITER, RUN, "s", [{"payload": 1}])).sequences == (1,)
    optimistic = first.store.committer.stats.optimistic_groups
    assert optimistic >= 1  # the first process now holds the stream at its latest version

    assert (await b.appender.append(WRITER, RUN, "s", [{"payload": 2}])).sequences == (2,)
    # Held at head 1, the first process would answer 2 again; the commit refuses that.
    assert (await a.appender.append(WRITER, RUN, "s", [{"payload": 3}])).sequences == (3,)

    assert first.store.committer.stats.conflicts == 1
    assert await sequences(a, "s") == [1, 2, 3]
    assert (await a.appender.append(WRITER, RUN, "s", [{"payload": 4}])).sequences == (4,)


async def test_a_refusal_decided_on_a_stale_state_is_not_answered(
        writers: tuple[PostgresAdapters, PostgresAdapters]) -> None:
    first, second = writers
    a, b = service_on(first), service_on(second)
    await a.definitions.create(WRITER, RUN, definition(
        "s", consumers=["c"], credit={"max_unread_items": 2}))
    await a.appender.append(WRITER, RUN, "s", [{"payload": 1}, {"payload": 2}])
    with pytest.raises(Backpressure):  # decided on the current state: a true refusal
        await a.appender.append(WRITER, RUN, "s", [{"payload": 3}])

    await b.acknowledger.ack(WRITER, RUN, "s", "c", 2)  # the other process frees the credit

    # The first process still holds the full window; the commit finds it changed.
    assert (await a.appender.append(WRITER, RUN, "s", [{"payload": 3}])).sequences == (3,)
    assert first.store.committer.stats.conflicts >= 1
    assert await sequences(a, "s") == [1, 2, 3]


async def test_a_run_erased_by_another_process_is_seen_by_work_on_a_held_state(
        writers: tuple[PostgresAdapters, PostgresAdapters]) -> None:
    first, second = writers
    a = service_on(first)
    await a.definitions.create(WRITER, RUN, definition("s"))
    await a.appender.append(WRITER, RUN, "s", [{"payload": 1}])
    seen: list[bool] = []

    async def work(session: StreamSession) -> bool:
        seen.append(session.run_erased)
        return session.run_erased

    key = RunKey(TENANT, RUN).stream("s")
    assert await first.store.transact(key, work) is False
    await second.store.mark_run_erased(RunKey(TENANT, RUN))

    # The held state cannot know; the commit finds the mark and the work runs again.
    assert await first.store.transact(key, work) is True
    assert seen == [False, False, True]


async def test_work_that_reads_what_the_version_does_not_vouch_for_runs_locked(
        writers: tuple[PostgresAdapters, PostgresAdapters]) -> None:
    first, _ = writers
    a = service_on(first)
    await a.definitions.create(WRITER, RUN, definition("s"))
    await a.appender.append(WRITER, RUN, "s", [{"payload": 1}])
    calls: list[bool] = []

    async def work(session: StreamSession) -> int:
        calls.append(True)
        return len(await session.intents())

    stats = first.store.committer.stats
    optimistic, groups = stats.optimistic_groups, stats.groups
    key = RunKey(TENANT, RUN).stream("s")
    assert await first.store.transact(key, work) == 0
    assert len(calls) == 2  # tried on the held state, refused, run again under the lock
    assert (stats.optimistic_groups, stats.groups) == (optimistic, groups + 1)


async def test_a_unit_of_work_inside_transact_is_refused_not_deadlocked(
        writers: tuple[PostgresAdapters, PostgresAdapters]) -> None:
    first, _ = writers
    a = service_on(first)
    for stream_id in ("outer", "inner"):
        await a.definitions.create(WRITER, RUN, definition(stream_id))
    run = RunKey(TENANT, RUN)

    async def nested(session: StreamSession) -> None:
        await first.store.transact(run.stream("inner"), lambda inner: _nothing())

    with pytest.raises(NestedUnitOfWork):
        await first.store.transact(run.stream("outer"), nested)
    assert (await a.appender.append(WRITER, RUN, "inner", [{"payload": 1}])).sequences == (1,)


async def _nothing() -> None:
    return None


async def test_closing_the_store_answers_a_group_whose_statement_is_in_flight(
        pg_dsn: str) -> None:  # noqa: F811
    adapters = await open_postgres(pg_dsn, migrate=False, listen=False)
    admin = await asyncpg.connect(pg_dsn)
    try:
        service = service_on(adapters)
        await service.definitions.create(WRITER, RUN, definition("s"))
        await service.appender.append(WRITER, RUN, "s", [{"payload": 1}])  # state now held
        holding = admin.transaction()
        await holding.start()
        await admin.execute("LOCK TABLE stream_events IN ACCESS EXCLUSIVE MODE")
        append = asyncio.create_task(service.appender.append(WRITER, RUN, "s", [{"payload": 2}]))
        await backend_waiting_for_a_lock(admin, "%runnel_event%")
        assert adapters.store.committer.stats.optimistic_groups == 1
        await adapters.store.committer.close()
        with pytest.raises(StoreClosed):
            async with asyncio.timeout(DEADLINE):
                await append
        await holding.rollback()
    finally:
        await admin.close()
        await adapters.close()
