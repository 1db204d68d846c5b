"""Concurrent dispatch workers claim each input-delivery row once (SKIP LOCKED)."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime

import pytest

from adapters.postgres import open_postgres
from tests.integration.support import RUN, WRITER, definition, service_on
from tests.pg import pg_dsn, pg_template  # noqa: F401  (fixtures)

pytestmark = pytest.mark.postgres

NOW = datetime(2026, 1, 1, tzinfo=UTC)


async def test_workers_claiming_at_once_never_share_a_row(pg_dsn: str) -> None:  # noqa: F811
    processes = [await open_postgres(pg_dsn, migrate=False, listen=False) for _ in range(2)]
    try:
        service = service_on(processes[0])
        for stream in ("a", "b", "c"):
            await service.definitions.create(WRITER, RUN, definition(stream, direction="input"))
            for _ in range(4):
                await service.appender.append(WRITER, RUN, stream,
                                              [{"payload": n} for n in range(5)])
        claims = await asyncio.gather(*(
            processes[n % 2].outbox.claim(f"worker-{n}", NOW, 30.0, 7, "local") for n in range(12)))
    finally:
        for adapters in processes:
            await adapters.close()
    claimed = [(d.stream.stream_id, d.sequence) for claim in claims for d in claim]
    assert len(claimed) == len(set(claimed)) == 60
    assert all(len(claim) <= 7 for claim in claims)
    owners = {(d.stream.stream_id, d.sequence): d.claimed_by for claim in claims for d in claim}
    assert all(owner is not None and owner.startswith("worker-") for owner in owners.values())
