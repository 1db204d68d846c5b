"""A run follow's cost against per-stream follows, in the same run: records/s of backfill
through the application and the SSE encoding, on the in-memory backend (no network, no
Postgres), for `--streams` streams of `--records` records each. Baseline: one
`Follower.open` + `encode_frame` per stream, one after the other; measured: one
`RunFollower.open` + `encode_run_frame` over them all. Prints figures; never passes or
fails on them.

Usage: `.venv/bin/python -m bench.run_follow [--streams 8] [--records 5000] [--rounds 3]`.
"""

from __future__ import annotations

import argparse
import asyncio
import time

from application.follow_frames import EndFrame, KeepaliveFrame, RecordFrame
from application.node import NodeSettings
from application.run_follow import StreamFrame
from domain.principal import Principal
from domain.run_cursor import RunCursor
from entrypoints.http.sse.frames import FrameMemo, encode_frame
from entrypoints.http.sse.run_frames import encode_run_frame
from entrypoints.testing.simulation import Simulation, simulation

ALICE = Principal("alice", "t1", frozenset({"streams:read", "streams:write"}))
RUN = "bench"


async def prepared(streams: int, records: int) -> Simulation:
    sim = simulation(node=NodeSettings(keepalive_seconds=3600))
    for index in range(streams):
        stream_id = f"s{index}"
        await sim.service.definitions.create(
            ALICE, RUN, {"stream_id": stream_id, "content_class": "output.text"})
        for first in range(0, records, 1000):  # a batch holds at most 1000 records
            await sim.service.appender.append(ALICE, RUN, stream_id, [
                {"payload": {"n": n, "text": "x" * 40}}
                for n in range(first, min(records, first + 1000))])
    return sim


async def per_stream(sim: Simulation, streams: int, records: int) -> int:
    sent = 0
    for index in range(streams):
        follow = await sim.service.follower.open(ALICE, RUN, f"s{index}", 0)
        memo = FrameMemo()  # a fresh memo: every frame is built, as for a first reader
        async for frame in follow.frames():
            encode_frame(frame, follow.key, memo)
            if isinstance(frame, RecordFrame):
                sent += 1
                if frame.record.sequence == records:
                    break
        await follow.close()
    return sent


async def one_run_follow(sim: Simulation, streams: int, records: int) -> int:
    follow = await sim.service.run_follower.open(ALICE, RUN, RunCursor())
    sent = 0
    async for frame in follow.frames():
        encode_run_frame(frame, RUN)
        if isinstance(frame, StreamFrame) and isinstance(frame.frame, RecordFrame):
            sent += 1
            if sent == streams * records:
                break
        elif not isinstance(frame, KeepaliveFrame | StreamFrame | EndFrame):
            break
    await follow.close()
    return sent


async def main(streams: int, records: int, rounds: int) -> None:
    sim = await prepared(streams, records)
    print(f"{streams} streams x {records} records, in-memory backend, {rounds} rounds")
    for name, case in (("per-stream follows (baseline)", per_stream),
                       ("one run follow", one_run_follow)):
        for round_ in range(rounds):
            started = time.perf_counter()
            sent = await case(sim, streams, records)
            seconds = time.perf_counter() - started
            print(f"  {name:32} round {round_ + 1}: {sent / seconds:10.0f} records/s")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--streams", type=int, default=8)
    parser.add_argument("--records", type=int, default=5000)
    parser.add_argument("--rounds", type=int, default=3)
    arguments = parser.parse_args()
    asyncio.run(main(arguments.streams, arguments.records, arguments.rounds))
