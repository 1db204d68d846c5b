"""Storage stops growing (ADR 0032): 20,000 appended records per round go through retention,
erasure, input delivery and the upkeep pass on real Postgres, and every table is bounded.
Later rounds on the same database grow no table (the space upkeep freed is reused)."""

from __future__ import annotations

import asyncio
from uuid import UUID

import asyncpg
import pytest

from adapters.postgres import PostgresAdapters, open_postgres
from adapters.postgres.ids import stream_id
from application.maintenance import UpkeepSettings
from application.node import NodeSettings
from application.ports.upkeep import UpkeepPass
from application.service import RunnelService
from domain.identifiers import StreamKey
from domain.principal import Principal
from tests.integration.support import RUN, TENANT, WRITER, definition, service_on
from tests.pg import pg_dsn, pg_template  # noqa: F401  (fixtures)

pytestmark = pytest.mark.postgres

ADMIN = Principal("root", TENANT, frozenset({"streams:admin"}))
KEPT = 100
"""Every retained stream keeps this many records (`max_records`)."""
AUDIT = 20
UPKEEP = UpkeepSettings(audit_events=AUDIT, receipt_min_seconds=0.0, delivery_keep_seconds=0.0,
                        gap_keep_seconds=0.0)
TABLES = ("streams", "stream_events", "records", "append_receipts", "consumers",
          "object_intents", "input_deliveries", "deletion_outbox", "gap_evidence",
          "erased_runs")
BATCH = 100


async def appends(service: RunnelService, run: str, stream: str, count: int, *,
                  single: int = 0) -> None:
    """`count` keyed records: the first `single` one append each (eight producers at once),
    the rest in batches of `BATCH`."""
    async def one_by_one(worker: int) -> None:
        for n in range(worker, single, 8):
            await service.appender.append(WRITER, run, stream,
                                          [{"payload": {"n": n}, "idempotency_key": f"k{n}"}])

    await asyncio.gather(*(one_by_one(worker) for worker in range(8)))
    for start in range(single, count, BATCH):
        await service.appender.append(WRITER, run, stream, [
            {"payload": {"n": n}, "idempotency_key": f"k{n}"}
            for n in range(start, min(count, start + BATCH))])


async def one_round(service: RunnelService, adapters: PostgresAdapters, round_no: int) -> None:
    """20,000 appends: 10,000 (1,000 one by one) to a stream keeping 100, 1,000 input
    records delivered, 9,000 to two streams of a run then erased; plus gap evidence."""
    erased_run = f"gone-{round_no}"
    for stream in ("a", "b"):
        await service.definitions.create(WRITER, erased_run, definition(stream))
    await appends(service, RUN, "tokens", 10_000, single=1_000)
    await appends(service, RUN, "inputs", 1_000)
    await appends(service, erased_run, "a", 5_000, single=200)
    await appends(service, erased_run, "b", 4_000)
    for n in range(50):
        await adapters.gaps.record_gap(StreamKey(TENANT, RUN, "tokens"), n, n + 2)
        await adapters.gaps.record_gap(StreamKey(TENANT, erased_run, "a"), n, n + 2)
    while await service.dispatcher.dispatch_once("test", 500):
        pass
    await service.retention.prune_all()
    await service.lifecycle.erase_run(ADMIN, erased_run)


async def upkeep(service: RunnelService) -> UpkeepPass:
    """Passes until one removes nothing (a pass removes what the previous one uncovered)."""
    assert service.maintenance is not None
    total = UpkeepPass()
    while (done := await service.maintenance.run_once()).total:
        total += done
    return total


async def rows(connection: asyncpg.Connection) -> dict[str, int]:
    return {table: int(await connection.fetchval(f"SELECT count(*) FROM {table}"))
            for table in TABLES}


async def sizes(connection: asyncpg.Connection) -> dict[str, int]:
    """Bytes of each table with its TOAST, once vacuumed as autovacuum would.

    Indexes are left out: Postgres recycles an emptied btree page only once no
    transaction of ANY database on the cluster could still see it (the shared horizon),
    so their bytes follow what other tests on the cluster are doing, not what upkeep
    removed. Heap space is reclaimed against this database's horizon alone, and the
    row counts (asserted exactly) bound the indexes' entries."""
    for table in TABLES:
        await connection.execute(f"VACUUM {table}")
    return {table: int(await connection.fetchval("SELECT pg_table_size($1)", table))
            for table in TABLES}


async def of_stream(connection: asyncpg.Connection, key: StreamKey) -> dict[str, int]:
    sid: UUID = stream_id(key)
    return {
        "records": await connection.fetchval(
            "SELECT count(*) FROM records WHERE stream = $1", sid),
        "receipts": await connection.fetchval(
            "SELECT count(*) FROM append_receipts WHERE stream = $1", sid),
        "events": await connection.fetchval(
            "SELECT count(*) FROM stream_events WHERE originator_id = $1", sid),
        "deliveries": await connection.fetchval(
            "SELECT count(*) FROM input_deliveries WHERE stream = $1", sid),
        "gaps": await connection.fetchval(
            "SELECT count(*) FROM gap_evidence WHERE stream = $1", sid),
        "consumers": await connection.fetchval(
            "SELECT count(*) FROM consumers WHERE stream = $1", sid),
    }


async def test_twenty_thousand_appends_leave_every_table_bounded(
        pg_dsn: str) -> None:  # noqa: F811
    adapters = await open_postgres(pg_dsn, migrate=False)
    observer = await asyncpg.connect(pg_dsn)
    try:
        service = service_on(adapters, NodeSettings(upkeep=UPKEEP))
        await service.definitions.create(WRITER, RUN, definition(
            "tokens", consumers=["ui"], retention={"max_records": KEPT},
            credit={"max_unread_items": 100_000}))
        await service.definitions.create(WRITER, RUN, definition(
            "inputs", direction="input", retention={"max_records": KEPT}))
        empty = await sizes(observer)

        await one_round(service, adapters, 1)
        grown_rows, grown = await rows(observer), await sizes(observer)
        removed = await upkeep(service)
        first_rows, first = await rows(observer), await sizes(observer)
        assert first_rows["records"] == 2 * KEPT

        await one_round(service, adapters, 2)
        await upkeep(service)
        second_rows, second = await rows(observer), await sizes(observer)

        await one_round(service, adapters, 3)
        await upkeep(service)
        third_rows, third = await rows(observer), await sizes(observer)

        print("\nrows before upkeep", grown_rows, "\nrows after", first_rows,
              "\nafter a second round", second_rows, "\nremoved", removed,
              "\nbytes: empty", empty, "\nbefore upkeep", grown, "\nafter", first,
              "\nafter a second round", second, "\nafter a third round", third)
        for retained in ("tokens", "inputs"):
            kept = await of_stream(observer, StreamKey(TENANT, RUN, retained))
            assert kept["records"] == KEPT and kept["receipts"] <= KEPT, kept
            assert kept["events"] <= AUDIT and kept["deliveries"] == 0, kept
            assert kept["gaps"] == 0, kept
        for round_no in (1, 2, 3):
            for stream in ("a", "b"):
                gone = await of_stream(observer, StreamKey(TENANT, f"gone-{round_no}", stream))
                assert set(gone.values()) == {0}, gone
        # What stays of an erased run is its mark and its stream rows (both answer 410).
        assert third_rows["erased_runs"] == 3 and third_rows["streams"] == 8
        assert third_rows["stream_events"] <= 2 * AUDIT
        assert third_rows["records"] == 2 * KEPT
        assert third_rows["append_receipts"] <= 2 * KEPT
        assert third_rows["input_deliveries"] == third_rows["gap_evidence"] == 0
        assert third_rows["consumers"] == 1  # the retained stream's; the erased ones' went
        # Before upkeep, the first round had left every append's receipt and event behind.
        assert grown_rows["append_receipts"] > 10_000
        # Space upkeep freed is reused: after three rounds (60,000 records) no table is
        # larger than at the first round's peak, where without upkeep the receipts and
        # events would have tripled.
        # `streams` is left out: its 8 rows are rewritten in place by every group commit, so
        # its bytes follow how many groups the load made (fewer, larger ones when the
        # machine is idle), not what upkeep removes; its row count is asserted above.
        for table in (table for table in TABLES if table != "streams"):
            assert third[table] <= grown[table] * 1.25 + 128 * 1024, (table, grown, third)
        widths = {table: await observer.fetchval(
            f"SELECT avg(pg_column_size(t.*))::int FROM {table} AS t")
            for table in ("records", "append_receipts", "stream_events")}
        print("average row bytes kept", widths)
    finally:
        await observer.close()
        await adapters.close()
