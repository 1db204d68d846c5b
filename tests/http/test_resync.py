"""A reader that retention overtakes mid-stream gets `event: resync` (SPEC §4): the 410
problem body naming the cursor it reached and the earliest record kept, then the end of
the response; it never receives a gap dressed as a continuation. Retention runs in a
separate worker process on the same database, as `runnel worker` would."""

from __future__ import annotations

import asyncio
import json

import httpx

from adapters.postgres import open_postgres
from domain.identifiers import StreamKey
from tests.http.raw_sse import (
    complete_frames,
    dechunk,
    open_stalled_reader,
    read_response_to_its_end,
)
from tests.http.server import RunnelServer
from tests.http.support import create_stream
from tests.integration.support import service_on

RECORDS = 200
BATCH = 10
KEPT = 10
PAYLOAD = "x" * 60_000
"""12 MB in all: the server blocks on the reader long before the last record."""


async def test_a_reader_overtaken_by_retention_gets_resync_then_the_end(
        api: httpx.AsyncClient, server: RunnelServer, database: str, run_id: str) -> None:
    await create_stream(api, run_id, credit={"max_unread_bytes": 64 * 1024 * 1024},
                        retention={"max_records": KEPT})
    sock = open_stalled_reader(server, f"/runs/{run_id}/streams/s/subscribe")
    for first in range(1, RECORDS + 1, BATCH):
        response = await api.post(f"/runs/{run_id}/streams/s/records", json={"records": [
            {"payload": {"n": n, "pad": PAYLOAD}} for n in range(first, first + BATCH)]})
        assert response.status_code == 201, response.text
    worker = await open_postgres(database, migrate=False, listen=False)
    try:  # while the server waits on the reader
        await service_on(worker).retention.prune(StreamKey("t1", run_id, "s"))
    finally:
        await worker.close()
    earliest = RECORDS - KEPT + 1
    assert (await api.get(f"/runs/{run_id}/streams/s")).json()["status"]["earliest"] == earliest

    frames = complete_frames(dechunk(await asyncio.to_thread(read_response_to_its_end, sock)))

    records = [int(frame["id"]) for frame in frames if frame.get("event") == "record"]
    assert records == list(range(1, len(records) + 1))  # no gap before the resync
    assert len(records) < earliest - 1  # the reader was overtaken
    # A keepalive (`: ping`) may come anywhere while the reader is stalled; nothing else may.
    events = [frame.get("event") for frame in frames if set(frame) != {""}]
    assert events[len(records):] == ["resync"]
    problem = json.loads(frames[-1]["data"])
    assert (problem["status"], problem["code"]) == (410, "cursor_pruned")
    assert (problem["requested"], problem["earliest"]) == (records[-1], earliest)
