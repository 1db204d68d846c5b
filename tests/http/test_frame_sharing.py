"""Many readers of one stream, one build per record (ADR 0048): the follows of distinct
principals, live or from a backfill, send the same bytes object for each record."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

from domain.principal import Principal
from entrypoints.http.sse.frames import FrameMemo
from entrypoints.http.sse.subscription import encoded_frames
from entrypoints.testing.simulation import simulation
from tests.application.support import RUN, TENANT, append_numbers, make_stream

READERS = 50


async def nothing() -> None:
    return None


async def record_frames(frames: AsyncIterator[bytes], count: int) -> list[bytes]:
    taken: list[bytes] = []
    while len(taken) < count:
        frame = await asyncio.wait_for(anext(frames), 5)
        if frame.startswith(b"id: "):
            taken.append(frame)
    return taken


async def test_every_reader_sends_the_one_frame_built_for_each_record() -> None:
    sim = simulation()
    await make_stream(sim)
    await append_numbers(sim, 1, 2)  # read from the store by each follow's backfill
    memo = FrameMemo()
    readers = [Principal(f"reader-{n}", TENANT, frozenset({"streams:read"}))
               for n in range(READERS)]
    follows = [await sim.service.follower.open(reader, RUN, "s", after=0) for reader in readers]
    streams = [encoded_frames(follow, nothing, memo) for follow in follows]
    try:
        backfilled = [await record_frames(frames, 2) for frames in streams]
        await append_numbers(sim, 3, 5)  # delivered live, with the wake
        live = [await record_frames(frames, 3) for frames in streams]
    finally:
        for frames in streams:
            await frames.aclose()  # type: ignore[attr-defined]
        for follow in follows:
            await follow.close()
    assert memo.builds == 5
    for received in (backfilled, live):
        for position in range(len(received[0])):
            assert all(frames[position] is received[0][position] for frames in received)
    assert [frame.split(b"\r\n")[0] for frame in backfilled[0] + live[0]] == [
        b"id: 1", b"id: 2", b"id: 3", b"id: 4", b"id: 5"]
