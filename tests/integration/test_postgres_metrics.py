"""What a Postgres backend exports moves when the thing it counts happens: a committed
group, a conflict, a fenced group, a lost LISTEN connection, a caller waiting for the
pool, an outbox row, a lagging consumer; and a store that does not answer gives NaN."""

from __future__ import annotations

import asyncio
import math
from collections.abc import Callable

import asyncpg
import pytest
from prometheus_client import CollectorRegistry

from adapters.postgres import PostgresAdapters, open_postgres
from adapters.postgres.fences import fence_region, unfence_region
from domain.errors import RegionFenced
from entrypoints.observability.postgres_metrics import PostgresMetrics
from tests.integration.support import DEADLINE, RUN, WRITER, definition, service_on
from tests.pg import pg_adapters, pg_dsn, pg_template  # noqa: F401  (fixtures)

pytestmark = pytest.mark.postgres


class Scraped:
    """A registry holding only the backend's collectors, as a node's holds them."""

    def __init__(self, adapters: PostgresAdapters) -> None:
        self.metrics = PostgresMetrics(adapters)
        self.registry = CollectorRegistry()
        for collector in self.metrics.collectors:
            self.registry.register(collector)

    async def value(self, name: str, **labels: str) -> float:
        await self.metrics.refresh(5.0)
        value = self.registry.get_sample_value(name, labels)
        assert value is not None, f"{name}{labels} is not exported"
        return value


async def until(condition: Callable[[], bool], what: str) -> None:
    async with asyncio.timeout(DEADLINE):
        while not condition():
            await asyncio.sleep(0.02)


async def test_an_append_is_a_committed_group_of_one_unit_in_the_size_histogram(
        pg_adapters: PostgresAdapters) -> None:  # noqa: F811
    scraped = Scraped(pg_adapters)
    service = service_on(pg_adapters)
    await service.definitions.create(WRITER, RUN, definition("s"))
    groups = await scraped.value("runnel_group_commit_groups_total")
    units = await scraped.value("runnel_group_commit_units_total")
    ones = await scraped.value("runnel_group_commit_size_bucket", le="1")
    await service.appender.append(WRITER, RUN, "s", [{"payload": 1}, {"payload": 2}])
    assert await scraped.value("runnel_group_commit_groups_total") == groups + 1
    assert await scraped.value("runnel_group_commit_units_total") == units + 1
    assert await scraped.value("runnel_group_commit_size_bucket", le="1") == ones + 1
    assert await scraped.value("runnel_group_commit_size_count") == groups + 1
    assert await scraped.value("runnel_group_commit_size_bucket", le="+Inf") == groups + 1
    assert await scraped.value("runnel_group_commit_optimistic_groups_total") >= 1
    assert await scraped.value("runnel_group_commit_queued") == 0


async def test_a_stream_another_process_wrote_counts_a_conflict(
        writers: tuple[PostgresAdapters, PostgresAdapters]) -> None:
    first, second = writers
    scraped = Scraped(first)
    a, b = service_on(first), service_on(second)
    await a.definitions.create(WRITER, RUN, definition("s"))
    await a.appender.append(WRITER, RUN, "s", [{"payload": 1}])
    assert await scraped.value("runnel_group_commit_conflicts_total") == 0
    await b.appender.append(WRITER, RUN, "s", [{"payload": 2}])
    await a.appender.append(WRITER, RUN, "s", [{"payload": 3}])
    assert await scraped.value("runnel_group_commit_conflicts_total") == 1
    assert await scraped.value("runnel_group_commit_failed_groups_total") == 0


async def test_a_write_in_a_fenced_region_counts_a_fenced_group(
        pg_adapters: PostgresAdapters, pg_dsn: str) -> None:  # noqa: F811
    scraped = Scraped(pg_adapters)
    service = service_on(pg_adapters)
    await service.definitions.create(WRITER, RUN, definition("s"))
    admin = await asyncpg.connect(pg_dsn)
    try:
        await fence_region(admin, "local")
        with pytest.raises(RegionFenced):
            await service.appender.append(WRITER, RUN, "s", [{"payload": 1}])
        assert await scraped.value("runnel_group_commit_fenced_groups_total") == 1
    finally:
        await unfence_region(admin, "local")
        await admin.close()


async def test_a_lost_listen_connection_is_down_then_counted_as_a_reconnect(
        pg_adapters: PostgresAdapters, pg_dsn: str) -> None:  # noqa: F811
    scraped = Scraped(pg_adapters)
    bus = pg_adapters.bus
    assert await scraped.value("runnel_listen_connected") == 1
    assert await scraped.value("runnel_listen_reconnects_total") == 0
    admin = await asyncpg.connect(pg_dsn)
    try:
        assert await admin.fetchval("SELECT pg_terminate_backend($1)", bus.listener_pid)
    finally:
        await admin.close()
    await until(lambda: bus.reconnects == 1 and bus.listen_connections == 1, "a reconnect")
    assert await scraped.value("runnel_listen_reconnects_total") == 1
    assert await scraped.value("runnel_listen_connected") == 1


async def test_the_pool_reports_its_size_use_and_waiting_callers(pg_dsn: str) -> None:  # noqa: F811
    adapters = await open_postgres(pg_dsn, migrate=False, listen=False, pool_size=5,
                                   commit_connections=1)
    try:
        scraped = Scraped(adapters)
        assert await scraped.value("runnel_db_pool_max_size") == 5
        assert await scraped.value("runnel_db_pool_waiting") == 0
        held = [await adapters.pool.acquire() for _ in range(5)]
        # Every connection is taken: the scrape's own query would wait too, so read the
        # in-memory figures only (the store figures turn NaN, which is tested below).
        assert scraped.registry.get_sample_value("runnel_db_pool_in_use") == 5
        assert scraped.registry.get_sample_value("runnel_db_pool_size") == 5
        waiter = asyncio.create_task(adapters.pool.fetchval("SELECT 1"))
        await until(lambda: scraped.registry.get_sample_value("runnel_db_pool_waiting") == 1,
                    "a caller waiting for the pool")
        await adapters.pool.release(held.pop())
        assert await asyncio.wait_for(waiter, DEADLINE) == 1
        assert scraped.registry.get_sample_value("runnel_db_pool_waiting") == 0
        for connection in held:
            await adapters.pool.release(connection)
        assert await scraped.value("runnel_db_pool_in_use") == 0
    finally:
        await adapters.close()


async def test_an_input_record_waits_in_the_outbox_with_its_age(
        pg_adapters: PostgresAdapters) -> None:  # noqa: F811
    scraped = Scraped(pg_adapters)
    service = service_on(pg_adapters)
    assert await scraped.value("runnel_outbox_depth", outbox="input_deliveries") == 0
    assert await scraped.value("runnel_outbox_oldest_age_seconds",
                               outbox="input_deliveries") == 0
    await service.definitions.create(WRITER, RUN, definition("in", direction="input"))
    await service.appender.append(WRITER, RUN, "in", [{"payload": 1}])
    assert await scraped.value("runnel_outbox_depth", outbox="input_deliveries") == 1
    await asyncio.sleep(0.01)  # the age is the database's now() minus the row's
    assert await scraped.value("runnel_outbox_oldest_age_seconds",
                               outbox="input_deliveries") > 0


async def test_a_due_body_deletion_is_counted_and_aged_from_when_it_fell_due(
        pg_adapters: PostgresAdapters) -> None:  # noqa: F811
    scraped = Scraped(pg_adapters)
    assert await scraped.value("runnel_outbox_depth", outbox="body_deletions") == 0
    async with pg_adapters.pool.acquire() as connection:
        await connection.execute(
            "INSERT INTO deletion_outbox (region, object_key, not_before) VALUES "
            "('local', 'later', now() + interval '1 hour'), "
            "('local', 'late', now() - interval '60 seconds')")
    assert await scraped.value("runnel_outbox_depth", outbox="body_deletions") == 2
    age = await scraped.value("runnel_outbox_oldest_age_seconds", outbox="body_deletions")
    assert 60 <= age < 3600  # the due row's lateness, not the waiting one's


async def test_a_lagging_consumer_shows_in_the_lag_gauges_until_it_acks(
        pg_adapters: PostgresAdapters) -> None:  # noqa: F811
    scraped = Scraped(pg_adapters)
    service = service_on(pg_adapters)
    await service.definitions.create(WRITER, RUN, definition(
        "s", consumers=["ui", "audit"]))
    await service.definitions.create(WRITER, RUN, definition("nobody"))  # no consumers
    await service.appender.append(WRITER, RUN, "nobody", [{"payload": n} for n in range(9)])
    assert await scraped.value("runnel_consumer_lag_sum") == 0
    await service.appender.append(WRITER, RUN, "s", [{"payload": n} for n in range(150)])
    assert await scraped.value("runnel_consumer_lag_max") == 150
    assert await scraped.value("runnel_consumer_lag_sum") == 300
    assert await scraped.value("runnel_consumers_lagging", at_least="1") == 2
    assert await scraped.value("runnel_consumers_lagging", at_least="100") == 2
    assert await scraped.value("runnel_consumers_lagging", at_least="10000") == 0
    await service.acknowledger.ack(WRITER, RUN, "s", "ui", 100)
    assert await scraped.value("runnel_consumer_lag_sum") == 200
    assert await scraped.value("runnel_consumers_lagging", at_least="100") == 1
    await service.lifecycle.close(WRITER, RUN, "s")
    assert await scraped.value("runnel_consumer_lag_max") == 0  # nothing more can arrive


async def test_a_store_that_does_not_answer_gives_nan_never_a_stale_figure(
        pg_dsn: str) -> None:  # noqa: F811
    adapters = await open_postgres(pg_dsn, migrate=False, listen=False, pool_size=3,
                                   commit_connections=1)
    try:
        scraped = Scraped(adapters)
        assert await scraped.value("runnel_outbox_depth", outbox="input_deliveries") == 0
        held = [await adapters.pool.acquire() for _ in range(3)]
        await scraped.metrics.refresh(0.2)  # no connection to read with: the bound passes
        for name, labels in (("runnel_outbox_depth", {"outbox": "input_deliveries"}),
                             ("runnel_outbox_oldest_age_seconds", {"outbox": "body_deletions"}),
                             ("runnel_consumer_lag_max", {}),
                             ("runnel_consumers_lagging", {"at_least": "1"})):
            value = scraped.registry.get_sample_value(name, labels)
            assert value is not None and math.isnan(value), name
        assert scraped.registry.get_sample_value("runnel_db_pool_in_use") == 3
        for connection in held:
            await adapters.pool.release(connection)
        assert await scraped.value("runnel_consumer_lag_max") == 0
    finally:
        await adapters.close()


async def test_a_node_told_not_to_read_the_store_figures_exports_none_of_them(
        pg_adapters: PostgresAdapters) -> None:  # noqa: F811
    metrics = PostgresMetrics(pg_adapters, store_figures=False)
    registry = CollectorRegistry()
    for collector in metrics.collectors:
        registry.register(collector)
    await metrics.refresh(5.0)
    assert registry.get_sample_value("runnel_consumer_lag_max") is None
    assert registry.get_sample_value("runnel_outbox_depth", {"outbox": "body_deletions"}) is None
    assert registry.get_sample_value("runnel_listen_connected") == 1
