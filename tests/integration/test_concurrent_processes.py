"""Eight OS processes append batches to one stream while readers tail it.

Proves, across processes sharing one Postgres:
- sequences are exactly 1..N: dense, no duplicates, each batch consecutive and
  in its own order (a batch is one transaction under the stream-row lock);
- the total-items ceiling is never exceeded, and a batch that does not fit is
  refused whole (quota_exhausted), never cut;
- readers tailing during the writes never skip a record: a follow loop (woken
  by NOTIFY from the other processes) and a plain poller that checks that
  every page starts right after its cursor (what a bigserial would break).
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from adapters.postgres import open_postgres
from application.node import NodeSettings
from domain.identifiers import StreamKey
from tests.integration.support import (
    DEADLINE,
    RUN,
    WRITER,
    definition,
    follow_to_end,
    service_on,
    spawn,
)
from tests.pg import pg_dsn, pg_template  # noqa: F401  (fixtures)

pytestmark = pytest.mark.postgres

PROCESSES = 8
BATCHES = 25
SIZE = 10
CEILING = 1505  # not a multiple of SIZE: the batch that would cross it must be refused whole


async def run_writer(dsn: str, writer: int) -> list[dict[str, Any]]:
    process = await spawn("tests.integration.writer_process", "batches", dsn, "shared",
                          str(writer), str(BATCHES), str(SIZE))
    stdout, stderr = await asyncio.wait_for(process.communicate(), DEADLINE)
    assert process.returncode == 0, stderr.decode()
    return [json.loads(line) for line in stdout.decode().splitlines()]


async def poll_without_skipping(service: Any, stop: asyncio.Event) -> list[int]:
    """Tail with plain reads; a page that does not start at cursor + 1 is a skip."""
    seen: list[int] = []
    cursor = 0
    while True:
        finished = stop.is_set()
        page = (await service.reading.read(WRITER, RUN, "shared", after=cursor)).page
        for record in page.records:
            assert record.sequence == cursor + 1, f"skipped from {cursor} to {record.sequence}"
            cursor = record.sequence
            seen.append(cursor)
        if finished and not page.records:
            return seen
        await asyncio.sleep(0.005)


async def test_eight_processes_append_densely_within_the_ceiling_and_readers_skip_nothing(
        pg_dsn: str) -> None:  # noqa: F811
    adapters = await open_postgres(pg_dsn, migrate=False)
    try:
        service = service_on(adapters, NodeSettings(keepalive_seconds=1.0))
        await service.definitions.create(WRITER, RUN, definition("shared", credit={
            "max_unread_items": 100_000, "max_total_items": CEILING}))
        follows = [await service.follower.open(WRITER, RUN, "shared", 0) for _ in range(2)]
        followers = [asyncio.create_task(follow_to_end(follow)) for follow in follows]
        stop_polling = asyncio.Event()
        poller = asyncio.create_task(poll_without_skipping(service, stop_polling))

        outcomes = await asyncio.gather(*(run_writer(pg_dsn, w) for w in range(PROCESSES)))

        await service.lifecycle.close(WRITER, RUN, "shared")
        stop_polling.set()
        followed = await asyncio.wait_for(asyncio.gather(*followers), DEADLINE)
        polled = await asyncio.wait_for(poller, DEADLINE)
        records = []
        cursor = 0
        while page := (await service.reading.read(WRITER, RUN, "shared", after=cursor,
                                                  limit=1000)).page.records:
            records.extend(page)
            cursor = page[-1].sequence
        stream = await adapters.store.load(StreamKey(WRITER.tenant, RUN, "shared"))
    finally:
        await adapters.close()

    stored = (CEILING // SIZE) * SIZE
    accepted = [(w, line) for w, lines in enumerate(outcomes) for line in lines
                if "sequences" in line]
    refused = [line for lines in outcomes for line in lines if "error" in line]
    all_sequences = sorted(s for _, line in accepted for s in line["sequences"])
    assert all_sequences == list(range(1, stored + 1))
    for _, line in accepted:
        first = line["sequences"][0]
        assert line["sequences"] == list(range(first, first + SIZE))
    assert {line["error"] for line in refused} == {"quota_exhausted"}
    assert len(refused) == PROCESSES * BATCHES - stored // SIZE

    assert [r.sequence for r in records] == list(range(1, stored + 1))
    by_sequence = {r.sequence: r.payload for r in records}
    for writer, line in accepted:
        payloads = [by_sequence[s] for s in line["sequences"]]
        assert payloads == [{"w": writer, "b": line["b"], "i": i} for i in range(SIZE)]
    assert stream is not None
    assert (stream.head, stream.total_items, stream.closed) == (stored, stored, True)

    for seen in (*followed, polled):
        assert seen == list(range(1, stored + 1))

