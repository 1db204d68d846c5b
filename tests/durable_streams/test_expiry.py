"""A facade stream whose TTL passes is deleted by the workers even if nobody looks at it
again (`FacadeExpiry`), on a real server on Postgres: its entry goes and its run's records
with it, while a stream without expiry stays."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator

import asyncpg
import pytest

from tests.durable_streams.support import client
from tests.http.restart import RestartableServer, restartable_server
from tests.integration.support import DEADLINE
from tests.pg import pg_template, run_sync  # noqa: F401  (fixture)

TEXT = {"content-type": "text/plain"}
TENANT = "ds-tests"
COUNTS = """
SELECT (SELECT count(*) FROM durable_streams WHERE tenant = $1 AND path = $2) AS entries,
       (SELECT count(*) FROM records JOIN streams ON streams.id = records.stream
        WHERE streams.tenant = $1 AND streams.run_id = $3) AS records
"""


@pytest.fixture(scope="module")
def server(pg_template: str, tmp_path_factory: pytest.TempPathFactory,  # noqa: F811
           ) -> Iterator[RestartableServer]:
    with restartable_server(pg_template, tmp_path_factory.mktemp("ds-expiry"),
                            {"RUNNEL_SWEEP_SECONDS": "0.2"}, workers=True) as running:
        yield running


def counts(server: RestartableServer, path: str, run_id: str) -> tuple[int, int]:
    async def query() -> tuple[int, int]:
        connection = await asyncpg.connect(server.dsn)
        try:
            row = await connection.fetchrow(COUNTS, TENANT, path, run_id)
        finally:
            await connection.close()
        return int(row["entries"]), int(row["records"])

    return run_sync(query)


def test_an_expired_stream_nobody_reads_is_deleted_by_the_workers(
        server: RestartableServer) -> None:
    expiring, kept = f"ttl-{uuid.uuid4().hex[:8]}", f"kept-{uuid.uuid4().hex[:8]}"
    with client(server.url, TENANT) as http:
        created = http.put(expiring, content="gone soon", headers={**TEXT, "Stream-TTL": "1"})
        assert created.status_code == 201, created.text
        lasting = http.put(kept, content="kept", headers=TEXT)
        assert lasting.status_code == 201, lasting.text
    run_id, kept_run = created.headers["runnel-run-id"], lasting.headers["runnel-run-id"]
    assert counts(server, expiring, run_id) == (1, 1)

    # Nobody looks at the path again (a look would delete it there): the database tells.
    deadline = time.monotonic() + DEADLINE  # stands in for "never"
    while counts(server, expiring, run_id) != (0, 0) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert counts(server, expiring, run_id) == (0, 0)
    assert counts(server, kept, kept_run) == (1, 1)
