"""Two writer processes create streams and append in runs while a third process erases
those runs: whatever the interleaving, nothing of an erased run is left unsealed or
stored once its erasure answered (ports: `StreamStore.create` and `mark_run_erased`).

A trigger makes every stream insert take 50 ms, as a loaded database would: a create
that looked at the run before the erasure marked it is then still inserting while the
eraser lists the run's streams."""

from __future__ import annotations

import asyncio
import json

import asyncpg
import pytest

from adapters.postgres import open_postgres
from domain.principal import Principal
from tests.integration.support import DEADLINE, TENANT, service_on, spawn
from tests.pg import pg_dsn, pg_template  # noqa: F401  (fixtures)

pytestmark = pytest.mark.postgres

RUNS = 8
ROUNDS = 6
SLOW_INSERTS = """
CREATE FUNCTION slow_stream_insert() RETURNS trigger LANGUAGE plpgsql AS
$$ BEGIN PERFORM pg_sleep(0.05); RETURN NEW; END $$;
CREATE TRIGGER slow_stream_insert BEFORE INSERT ON streams
FOR EACH ROW EXECUTE FUNCTION slow_stream_insert();
"""
ADMIN = Principal("root", TENANT, frozenset({"streams:admin"}))


async def test_nothing_is_stored_in_a_run_after_its_erasure_answered(
        pg_dsn: str) -> None:  # noqa: F811
    connection = await asyncpg.connect(pg_dsn)
    try:
        await connection.execute(SLOW_INSERTS)
    finally:
        await connection.close()
    writers = [await spawn("tests.integration.writer_process", "churn", pg_dsn, str(w),
                           str(RUNS), str(ROUNDS)) for w in range(2)]
    adapters = await open_postgres(pg_dsn, migrate=False, listen=False)
    try:
        service = service_on(adapters)
        for process in writers:  # both are writing in every run
            assert process.stdout is not None
            line = await asyncio.wait_for(process.stdout.readline(), DEADLINE)
            assert line == b"STARTED\n", line
        for run in range(RUNS):
            await service.lifecycle.erase_run(ADMIN, f"erase-{run}")
            await asyncio.sleep(0.1)
        outcomes = []
        for process in writers:
            stdout, stderr = await asyncio.wait_for(process.communicate(), DEADLINE)
            assert process.returncode == 0, stderr.decode()
            outcomes.append(json.loads(stdout))
    finally:
        await adapters.close()

    for outcome in outcomes:  # the writers really raced the eraser
        assert outcome["stored"] > 0
        assert outcome["refused"].get("run_erased", 0) > 0
        assert set(outcome["refused"]) <= {"run_erased", "not_found"}
    connection = await asyncpg.connect(pg_dsn)
    try:
        unsealed = await connection.fetch(
            "SELECT run_id, stream_id FROM streams WHERE NOT erased")
        records = await connection.fetchval(
            "SELECT count(*) FROM records AS r JOIN streams AS s ON s.id = r.stream")
    finally:
        await connection.close()
    assert [tuple(row) for row in unsealed] == []
    assert records == 0
