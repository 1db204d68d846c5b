"""One process per region runs the region-wide sweeps (ADR 0032): two maintenance loops on
one database take turns through the leader's advisory lock, and the follower takes over
once the leader's session is gone."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import asyncpg
import pytest

from adapters.postgres.leadership import UPKEEP_LOCK_CLASS, PostgresLeadership
from entrypoints.composition.workers import Worker, every, led
from entrypoints.observability.metrics import Metrics
from tests.pg import pg_dsn, pg_template  # noqa: F401  (fixtures)

pytestmark = pytest.mark.postgres

DEADLINE = 60.0  # an upper bound for an outcome to arrive; never asserted as a duration
TICK = 0.02

_HOLDER = """
SELECT pid FROM pg_locks
WHERE locktype = 'advisory' AND granted AND objsubid = 2
  AND classid = $1::int8::oid AND objid = hashtext($2)::oid
  AND database = (SELECT oid FROM pg_database WHERE datname = current_database())
"""


async def until(condition: Callable[[], bool]) -> None:
    async def poll() -> None:
        while not condition():
            await asyncio.sleep(TICK)

    await asyncio.wait_for(poll(), DEADLINE)


async def holder(dsn: str, region: str = "local") -> int | None:
    """The server pid of the session holding the region's upkeep lock, if any."""
    connection = await asyncpg.connect(dsn)
    try:
        pid = await connection.fetchval(_HOLDER, UPKEEP_LOCK_CLASS, region)
        return int(pid) if pid is not None else None
    finally:
        await connection.close()


async def terminate(dsn: str, pid: int) -> None:
    """End that session, as a crash or a cut link would, and wait until it is gone."""
    connection = await asyncpg.connect(dsn)
    try:
        assert await connection.fetchval("SELECT pg_terminate_backend($1)", pid)
        gone = "SELECT NOT EXISTS (SELECT 1 FROM pg_stat_activity WHERE pid = $1)"
        while not await connection.fetchval(gone, pid):
            await asyncio.sleep(TICK)
    finally:
        await connection.close()


async def test_one_contender_leads_per_region_and_another_takes_over_from_a_dead_session(
        pg_dsn: str) -> None:  # noqa: F811
    first, second = PostgresLeadership(pg_dsn, "local"), PostgresLeadership(pg_dsn, "local")
    elsewhere = PostgresLeadership(pg_dsn, "eu")
    try:
        assert await first.lead()
        assert not await second.lead()
        assert await first.lead() and not await second.lead()  # the lead is kept
        assert await elsewhere.lead()  # each region has its own leader
        pid = await holder(pg_dsn)
        assert pid is not None

        await terminate(pg_dsn, pid)  # the leader's session ends (a crash, a cut link)

        assert await second.lead()  # the lock went with the session: the follower takes it
        assert not await first.lead()  # the old leader notices, and is a follower now
        assert await second.lead() and not await first.lead()
        assert await elsewhere.lead()
    finally:
        for contender in (first, second, elsewhere):
            await contender.close()
    assert await holder(pg_dsn) is None  # closing hands the lead back


async def test_the_leader_keeps_the_lead_when_its_led_sweeps_ask_at_once(
        pg_dsn: str) -> None:  # noqa: F811
    # Every led sweep of a process (retention, orphan sweep, upkeep) asks from its own task;
    # two statements at once on the one session must neither fail it nor drop the lead.
    leadership = PostgresLeadership(pg_dsn, "local")
    try:
        assert await leadership.lead()
        pid = await holder(pg_dsn)
        for _ in range(5):
            assert await asyncio.gather(*(leadership.lead() for _ in range(4))) == [True] * 4
        assert leadership.leading and await holder(pg_dsn) == pid
    finally:
        await leadership.close()


async def test_two_maintenance_loops_take_turns_and_the_follower_takes_over(
        pg_dsn: str) -> None:  # noqa: F811
    passes: dict[str, int] = {"a": 0, "b": 0}
    running: set[str] = set()
    overlaps: list[set[str]] = []

    def sweep_of(name: str) -> Callable[[], asyncio.Future[int]]:
        async def sweep() -> int:
            running.add(name)
            if len(running) > 1:
                overlaps.append(set(running))
            await asyncio.sleep(TICK)  # a pass takes a while
            running.discard(name)
            passes[name] += 1
            return 0

        return sweep  # type: ignore[return-value]

    a, b = PostgresLeadership(pg_dsn, "local"), PostgresLeadership(pg_dsn, "local")
    loop_a = asyncio.create_task(
        every(Worker("upkeep-a", led(a, sweep_of("a")), None, TICK), Metrics()))
    await until(lambda: passes["a"] >= 3)  # a leads first
    loop_b = asyncio.create_task(
        every(Worker("upkeep-b", led(b, sweep_of("b")), None, TICK), Metrics()))
    try:
        await until(lambda: passes["a"] >= 20)
        assert passes["b"] == 0 and not overlaps  # only the leader works

        pid = await holder(pg_dsn)
        assert pid is not None
        await terminate(pg_dsn, pid)  # the leader's session dies
        await until(lambda: passes["b"] >= 3)  # the follower takes over
        after_takeover = passes["a"]
        await until(lambda: passes["b"] >= 20)
        assert passes["a"] == after_takeover  # and the old leader stays a follower
        assert await holder(pg_dsn) not in (None, pid)
    finally:
        for task in (loop_a, loop_b):
            task.cancel()
        await asyncio.gather(loop_a, loop_b, return_exceptions=True)
        await a.close()
        await b.close()
