"""A reader that stops taking frames is disconnected after the stall timeout, and resumes
with Last-Event-ID losing and repeating nothing (SPEC §4: durable streams never drop a frame;
the server waits, with bounded memory, then lets go)."""

from __future__ import annotations

import httpx

from tests.http.raw_sse import complete_record_ids, dechunk, drain, open_stalled_reader
from tests.http.server import RunnelServer
from tests.http.support import (
    create_stream,
    has_event,
    metric,
    read_events,
    records_of,
    wait_for_metric,
)

SERVER_ENV = {"RUNNEL_SSE_STALL_SECONDS": "2"}
RECORDS = 200
BATCH = 10
PAYLOAD = "x" * 60_000
"""12 MB in all: far more than the socket buffers of both ends hold, so the server blocks."""


async def test_a_stalled_reader_is_disconnected_and_resumes_losing_nothing(
        api: httpx.AsyncClient, server: RunnelServer, run_id: str) -> None:
    await create_stream(api, run_id, credit={"max_unread_bytes": 64 * 1024 * 1024})
    path = f"/runs/{run_id}/streams/s/subscribe"
    stalled_before = await metric(server.url, "runnel_sse_stalled_disconnects_total")
    sock = open_stalled_reader(server, path)
    for first in range(1, RECORDS + 1, BATCH):
        response = await api.post(f"/runs/{run_id}/streams/s/records", json={"records": [
            {"payload": {"n": n, "pad": PAYLOAD}} for n in range(first, first + BATCH)]})
        assert response.status_code == 201, response.text
    await api.post(f"/runs/{run_id}/streams/s/close")

    # The server gives up on the reader while it still reads nothing...
    await wait_for_metric(server.url, "runnel_sse_stalled_disconnects_total",
                          lambda value: value == stalled_before + 1)
    await wait_for_metric(server.url, "runnel_sse_readers", lambda value: value == 0)
    # ...so what the reader can still read is cut short of the end.
    before_cut = complete_record_ids(dechunk(drain(sock)))
    assert before_cut == list(range(1, len(before_cut) + 1))
    assert len(before_cut) < RECORDS

    resumed = await read_events(api, path, until=has_event("end"),
                                headers={"Last-Event-ID": str(before_cut[-1] if before_cut
                                                              else 0)})
    assert before_cut + records_of(resumed) == list(range(1, RECORDS + 1))
