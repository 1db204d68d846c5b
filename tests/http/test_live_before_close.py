"""Close after live (SPEC, ADR 0056), against a real server of two API processes behind
one port: a producer's `POST …/live` chunks answered before its `POST …/close` reach
every connected `?live=true` reader before that reader's `end`, and nothing published
once the close has answered is ever delivered.

Each request goes on a fresh connection, so the kernel spreads the chunks, the close and
the readers over both processes; the race is tried many times, with nothing in between.
"""

from __future__ import annotations

import asyncio

import httpx

from tests.http.server import RunnelServer, bearer, token
from tests.http.support import GUARD_SECONDS, create_stream
from tests.http.test_live import Subscriber, has, live_frames, publish, subscribe

SERVER_ENV = {"RUNNEL_PROCESSES": "2"}
TRIES = 40
READERS = 3
CHUNKS = 3


def one_connection_per_request(server: RunnelServer) -> httpx.AsyncClient:
    return httpx.AsyncClient(base_url=server.api, headers=bearer(token()), timeout=30,
                             limits=httpx.Limits(max_keepalive_connections=0))


async def test_chunks_answered_before_a_close_reach_every_reader_before_its_end(
        server: RunnelServer, run_id: str) -> None:
    async with one_connection_per_request(server) as api:
        for attempt in range(TRIES):
            stream_id = f"s{attempt}"
            await create_stream(api, run_id, stream_id)
            readers = [await subscribe(api, run_id, stream_id, live=True)
                       for _ in range(READERS)]
            await chunks_then_close(api, api, readers, run_id, stream_id, attempt)


async def test_chunks_published_once_the_close_answered_are_never_delivered(
        server: RunnelServer, run_id: str) -> None:
    async with one_connection_per_request(server) as api:
        for attempt in range(TRIES // 4):
            stream_id = f"late{attempt}"
            await create_stream(api, run_id, stream_id)
            readers = [await subscribe(api, run_id, stream_id, live=True)
                       for _ in range(READERS)]
            try:
                assert (await publish(api, run_id, {"chunks": ["before"]},
                                      stream_id)).status_code == 202
                closed = await api.post(f"/runs/{run_id}/streams/{stream_id}/close")
                assert closed.status_code == 200, closed.text
                late = await publish(api, run_id, {"chunks": ["after"]}, stream_id)
                assert late.status_code == 409, late.text
                for reader in readers:
                    frames = await reader.wait_for(has("end"))
                    assert [frame.data["data"] for frame in live_frames(frames)] == ["before"]
            finally:
                for reader in readers:
                    await reader.stop()


async def chunks_then_close(publisher: httpx.AsyncClient, closer: httpx.AsyncClient,
                            readers: list[Subscriber], run_id: str, stream_id: str,
                            attempt: int) -> None:
    """Publish `CHUNKS` chunks, one request each, then close: every reader gets them all,
    then `end`. The readers are stopped whatever happens."""
    try:
        sent = [f"chunk-{attempt}-{n}" for n in range(CHUNKS)]
        for chunk in sent:
            response = await publish(publisher, run_id, {"chunks": [chunk]}, stream_id)
            assert response.status_code == 202, response.text
        closed = await closer.post(f"/runs/{run_id}/streams/{stream_id}/close")
        assert closed.status_code == 200, closed.text
        for reader in readers:
            await assert_all_before_end(reader, sent, attempt)
    finally:
        for reader in readers:
            await reader.stop()


async def assert_all_before_end(reader: Subscriber, sent: list[str], attempt: int) -> None:
    frames = await reader.wait_for(has("end"))
    async with asyncio.timeout(GUARD_SECONDS):
        await reader.finished()
    events = [frame.event for frame in frames]
    assert events[-1] == "end", events
    delivered = [frame.data["data"] for frame in live_frames(frames)]
    assert delivered == sent, f"try {attempt}: {events}"
