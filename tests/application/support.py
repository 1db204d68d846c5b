"""What the application tests share: principals, a service on in-memory adapters, objects
uploaded and committed, frame helpers."""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

from dependency_injector import providers

from adapters.memory.bus import MemoryWakeBus
from adapters.memory.clock import FakeClock
from adapters.memory.store import MemoryStreamStore
from application.follow_frames import Frame, KeepaliveFrame, RecordFrame
from application.node import NodeSettings
from application.service import RunnelService
from domain.identifiers import StreamKey
from domain.object_intent import ObjectIntent, ObjectPins
from domain.principal import Principal
from entrypoints.testing.simulation import Simulation, simulation

TENANT = "t1"
RUN = "run-1"
READ_WRITE = frozenset({"streams:read", "streams:write"})

ALICE = Principal("alice", TENANT, READ_WRITE)
BOB = Principal("bob", TENANT, READ_WRITE)
READER = Principal("mallory", TENANT, frozenset({"streams:read"}))
ADMIN = Principal("root", TENANT, frozenset({"streams:admin"}))
FRAME_TIMEOUT = 5.0


def key(stream_id: str = "s", run_id: str = RUN) -> StreamKey:
    return StreamKey(TENANT, run_id, stream_id)


def fake_clock(sim: Simulation) -> FakeClock:
    assert isinstance(sim.ports.clock, FakeClock)
    return sim.ports.clock


def definition(stream_id: str = "s", **pins: Any) -> dict[str, Any]:
    return {"stream_id": stream_id, "content_class": "output.text", **pins}


async def make_stream(sim: Simulation, stream_id: str = "s", run_id: str = RUN,
                      **pins: Any) -> None:
    await sim.service.definitions.create(ALICE, run_id, definition(stream_id, **pins))


async def append_numbers(sim: Simulation, first: int, last: int, stream_id: str = "s",
                         run_id: str = RUN) -> tuple[int, ...]:
    """Append payloads first..last in one batch; returns the sequences."""
    result = await sim.service.appender.append(
        ALICE, run_id, stream_id, [{"payload": n} for n in range(first, last + 1)])
    return result.sequences


def object_pins(body: bytes, idempotency_key: str = "o1",
                content_type: str = "application/pdf") -> ObjectPins:
    return ObjectPins(idempotency_key, hashlib.sha256(body).hexdigest(), len(body), content_type)


async def body_of(*parts: bytes) -> AsyncIterator[bytes]:
    for part in parts:
        yield part


async def uploaded(sim: Simulation, idempotency_key: str = "o1", body: bytes = b"body",
                   stream_id: str = "s", run_id: str = RUN) -> ObjectIntent:
    """An object intent of ALICE's, prepared and its body uploaded (not committed)."""
    intent, _ = await sim.service.objects.prepare(ALICE, run_id, stream_id,
                                                  object_pins(body, idempotency_key))
    await sim.service.objects.upload(ALICE, run_id, stream_id, intent.object_id, body_of(body))
    return intent


async def committed(sim: Simulation, idempotency_key: str = "o1", body: bytes = b"body",
                    stream_id: str = "s", run_id: str = RUN) -> ObjectIntent:
    """`uploaded`, then committed: the stream holds its object record."""
    intent = await uploaded(sim, idempotency_key, body, stream_id, run_id)
    await sim.service.objects.commit(ALICE, run_id, stream_id, intent.object_id)
    return intent


@dataclass
class QuietSimulation:
    """The service whose store rings a bell nobody listens to: readers hear only what a test
    delivers through `reader_bus.hub`, as if wakes were lost."""

    service: RunnelService
    store: MemoryStreamStore
    reader_bus: MemoryWakeBus


def quiet_simulation(node: NodeSettings) -> QuietSimulation:
    reader_bus = MemoryWakeBus()
    sim = simulation(node)
    sim.container.bus.override(providers.Object(reader_bus))
    assert isinstance(sim.ports.store, MemoryStreamStore)
    return QuietSimulation(sim.service, sim.ports.store, reader_bus)


@asynccontextmanager
async def following(service: RunnelService, principal: Principal, run_id: str,
                    stream_id: str, after: int, **options: Any
                    ) -> AsyncIterator[AsyncIterator[Frame]]:
    """The frames of a follow opened with these arguments; the follow closes on exit."""
    follow = await service.follower.open(principal, run_id, stream_id, after, **options)
    try:
        yield follow.frames()
    finally:
        await follow.close()


async def next_frame(frames: AsyncIterator[Frame]) -> Frame:
    return await asyncio.wait_for(anext(frames), FRAME_TIMEOUT)


async def next_non_keepalive(frames: AsyncIterator[Frame]) -> Frame:
    while True:
        frame = await next_frame(frames)
        if not isinstance(frame, KeepaliveFrame):
            return frame


async def take_records(frames: AsyncIterator[Frame], count: int) -> list[int]:
    """The sequences of the next `count` frames, which must all be records (keepalives skipped)."""
    sequences: list[int] = []
    while len(sequences) < count:
        frame = await next_non_keepalive(frames)
        assert isinstance(frame, RecordFrame), f"expected a record, got {frame!r}"
        sequences.append(frame.record.sequence)
    return sequences



async def head_of(sim: Simulation, stream_id: str = "s", run_id: str = RUN) -> int:
    stream = await sim.ports.store.load(key(stream_id, run_id))
    assert stream is not None
    return stream.head


async def eventually(condition: Callable[[], bool]) -> None:
    """Let other tasks run until `condition` holds (bounded, so a broken test fails, not hangs)."""

    async def poll() -> None:
        while not condition():
            await asyncio.sleep(0)

    await asyncio.wait_for(poll(), FRAME_TIMEOUT)


async def drain(frames: AsyncIterator[Frame]) -> list[Frame]:
    """Every remaining frame of a follow that must end by itself."""

    async def collect() -> list[Frame]:
        return [frame async for frame in frames]

    return await asyncio.wait_for(collect(), FRAME_TIMEOUT)
