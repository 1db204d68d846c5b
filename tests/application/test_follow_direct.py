"""Serving caught-up wakes directly (ADR 0079): a follow with a `DirectSink` delivers exactly
what a plain follow delivers, in order, nothing lost or repeated, whatever Hypothesis makes
of the wakes (lost, repeated, without records), the sink (ready or pushing back), the
reader (slow) and its connection (cut, then resumed from the last record it got)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from application.follow_frames import EndFrame, Frame, RecordFrame
from application.follow_loop import OpenFollow
from application.node import NodeSettings
from application.ports.records import StoredRecord
from application.ports.waking import LiveChunk, Wake
from domain.identifiers import StreamKey
from entrypoints.testing.simulation import Simulation, simulation
from tests.application.support import (
    ALICE,
    FRAME_TIMEOUT,
    RUN,
    QuietSimulation,
    append_numbers,
    definition,
    eventually,
    key,
    make_stream,
    quiet_simulation,
)

TICK = 0.005
"""A keepalive interval short enough that the re-reads repairing lost wakes fall between
steps."""


@dataclass
class Reader:
    """What one reader received, over all its connections, and its sink's state."""

    received: list[int] = field(default_factory=list)
    ends: list[EndFrame] = field(default_factory=list)
    ready: bool = True
    direct: int = 0
    """Records that reached it through the sink."""


@dataclass
class Sink:
    reader: Reader

    def ready(self) -> bool:
        return self.reader.ready

    def send_records(self, key: StreamKey, records: Sequence[StoredRecord]) -> None:
        assert key == StreamKey("t1", RUN, "s")
        self.reader.received += [record.sequence for record in records]
        self.reader.direct += len(records)


WAKES = ("carry", "lose", "twice", "bare", "stale")
steps = st.lists(st.one_of(
    st.tuples(st.just("append"), st.integers(1, 3), st.sampled_from(WAKES)),
    st.tuples(st.just("wake"), st.just(0), st.sampled_from(WAKES)),
    st.tuples(st.just("sink"), st.integers(0, 1), st.just("")),
    st.tuples(st.just("slow"), st.integers(1, 3), st.just("")),
    st.tuples(st.just("turn"), st.integers(1, 3), st.just("")),
    st.tuples(st.just("wait"), st.integers(1, 3), st.just("")),
    st.tuples(st.just("cut"), st.just(0), st.just("")),
    st.tuples(st.just("live"), st.integers(1, 9), st.just("")),
), max_size=24)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(script=steps)
def test_a_direct_follow_delivers_what_a_plain_follow_delivers(
        script: list[tuple[str, int, str]]) -> None:
    plain = asyncio.run(play(script, direct=False))
    served = asyncio.run(play(script, direct=True))
    appended = sum(n for action, n, _ in script if action == "append")
    assert plain.received == served.received == list(range(1, appended + 1))
    assert plain.ends[-1] == served.ends[-1] == EndFrame(appended)


async def play(script: list[tuple[str, int, str]], direct: bool) -> Reader:
    """The script on a service whose wakes the test delivers (as the bus would, or not),
    with one reader; then the stream closes and the reader reads to its end."""
    quiet = quiet_simulation(NodeSettings(keepalive_seconds=TICK))
    await quiet.service.definitions.create(ALICE, RUN, definition())
    reader = Reader()
    connection = await Connection.open(quiet, reader, direct)
    appended = 0
    try:
        for action, n, how in script:
            if action == "append":
                await quiet.service.appender.append(
                    ALICE, RUN, "s", [{"payload": i} for i in range(n)])
                appended += n
                await connection.wake(quiet, appended - n, appended, how)
            elif action == "wake":
                await connection.wake(quiet, max(appended - 2, 0), appended, how)
            elif action == "sink":
                reader.ready = bool(n)
            elif action == "slow":
                connection.slow(n * TICK)
            elif action == "turn":
                for _ in range(n):
                    await asyncio.sleep(0)
            elif action == "wait":
                await asyncio.sleep(n * TICK / 2)
            elif action == "cut":
                await connection.cut()
                connection = await Connection.open(quiet, reader, direct)
            else:
                quiet.reader_bus.hub.deliver_live(LiveChunk(key(), n, "between the wakes"))
            await asyncio.sleep(0)
        reader.ready = True
        await quiet.service.lifecycle.close(ALICE, RUN, "s")
        quiet.reader_bus.hub.deliver_wake(Wake(key(), appended, True, None))
        await asyncio.wait_for(connection.task, FRAME_TIMEOUT)
    finally:
        await connection.cut()
    return reader


@dataclass
class Connection:
    """One connection of the reader: a task taking the follow's frames, at its pace."""

    follow: OpenFollow
    task: asyncio.Task[None]
    pace: list[float]

    @classmethod
    async def open(cls, quiet: QuietSimulation, reader: Reader, direct: bool) -> Connection:
        after = reader.received[-1] if reader.received else 0
        follow = await quiet.service.follower.open(ALICE, RUN, "s", after, live=True)
        if direct:
            follow.serve_directly(Sink(reader))
        pace: list[float] = []
        return cls(follow, asyncio.create_task(cls._read(follow, reader, pace)), pace)

    @staticmethod
    async def _read(follow: OpenFollow, reader: Reader, pace: list[float]) -> None:
        async for frame in follow.frames():
            if isinstance(frame, RecordFrame):
                reader.received.append(frame.record.sequence)
            elif isinstance(frame, EndFrame):
                reader.ends.append(frame)
            if pace:
                await asyncio.sleep(pace.pop())

    def slow(self, seconds: float) -> None:
        """The next frame is taken only `seconds` after it came."""
        self.pace.append(seconds)

    async def wake(self, quiet: QuietSimulation, after: int, head: int, how: str) -> None:
        """Deliver the wake of the records after `after` up to `head` as the bus would
        (`carry`), lose it, deliver it twice, without its records, or carrying only the
        first of them."""
        if how == "lose" or head == after:
            return
        records = (await quiet.store.read_page(key(), after, head - after)).records
        hub = quiet.reader_bus.hub
        if how == "bare":
            hub.deliver_wake(Wake(key(), head, False, None))
        elif how == "stale":
            hub.deliver_wake(Wake(key(), head, False, tuple(records[:1])))
        else:
            for _ in range(2 if how == "twice" else 1):
                hub.deliver_wake(Wake(key(), head, False, tuple(records)))

    async def cut(self) -> None:
        self.task.cancel()
        await asyncio.gather(self.task, return_exceptions=True)
        await self.follow.close()


@asynccontextmanager
async def parked(reader: Reader) -> AsyncIterator[tuple[Simulation, OpenFollow, list[Frame]]]:
    """A caught-up follow with a sink, its task taking frames into a list."""
    sim = simulation()
    await make_stream(sim)
    follow = await sim.service.follower.open(ALICE, RUN, "s", 0)
    follow.serve_directly(Sink(reader))
    taken: list[Frame] = []

    async def take() -> None:
        async for frame in follow.frames():
            taken.append(frame)

    task = asyncio.create_task(take())
    await asyncio.sleep(0.01)
    try:
        yield sim, follow, taken
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        await follow.close()


async def test_a_caught_up_follow_is_served_from_the_publishers_call() -> None:
    """With the reader's task parked, an append reaches the sink before the task runs."""
    reader = Reader()
    async with parked(reader) as (sim, follow, taken):
        await append_numbers(sim, 1, 2)
        assert reader.received == [1, 2] and follow.cursor == 2
        await append_numbers(sim, 3, 3)
        assert reader.received == [1, 2, 3]
        await asyncio.sleep(0.01)
        assert taken == []


async def test_a_sink_that_pushes_back_leaves_the_wake_to_the_task() -> None:
    reader = Reader(ready=False)
    async with parked(reader) as (sim, _, taken):
        await append_numbers(sim, 1, 1)
        assert reader.received == []
        await eventually(lambda: len(taken) == 1)
        assert isinstance(taken[0], RecordFrame) and taken[0].record.sequence == 1
        reader.ready = True
        await asyncio.sleep(0.01)
        await append_numbers(sim, 2, 2)
        assert reader.received == [2]


async def test_an_ended_follow_takes_no_wake() -> None:
    """A revoked follow's next frame is its end: nothing reaches the sink after `end`."""
    reader = Reader()
    async with parked(reader) as (sim, follow, taken):
        follow.end("token_revoked")
        await append_numbers(sim, 1, 1)
        assert reader.received == []
        await eventually(lambda: taken == [EndFrame(0, "token_revoked")])


async def test_a_closing_wake_goes_to_the_task_which_ends_the_follow() -> None:
    reader = Reader()
    async with parked(reader) as (sim, _, taken):
        await append_numbers(sim, 1, 1)
        await sim.service.lifecycle.close(ALICE, RUN, "s")
        assert reader.received == [1]
        await eventually(lambda: taken == [EndFrame(1)])
