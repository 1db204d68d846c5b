"""A facade SSE connection holds one Runnel follow and shares its `event: data` bytes (ADR
0071), in process on the memory adapters: readers of one stream get the same bytes, built
once; a reader that takes nothing for a while loses nothing; a connection holds one
subscription slot for its life; the memo is bounded and never serves another record."""

from __future__ import annotations

import asyncio
import base64
import json
from collections.abc import AsyncIterator
from typing import Any

import pytest

from adapters.memory.clock import FakeClock
from adapters.memory.durable_streams import MemoryFacadeCatalog
from application.durable_streams.facade import DurableStreams
from application.durable_streams.stream_config import StreamConfig
from application.node import NodeSettings
from application.ports.durable_streams import FacadeEntry
from application.ports.records import StoredRecord
from domain.errors import TooManySubscriptions
from domain.identifiers import StreamKey
from domain.principal import Principal, Scope
from entrypoints.http.durable_streams.bodies import to_records
from entrypoints.http.durable_streams.data_memo import DataMemo
from entrypoints.http.durable_streams.reads import ReadPlan
from entrypoints.http.durable_streams.sse import sse_frames
from entrypoints.testing.simulation import simulation

ALICE = Principal(sub="alice", tenant="t1", scopes=frozenset({Scope.READ.value,
                                                              Scope.WRITE.value}))
WAIT = 10.0


class Node:
    def __init__(self, subscriptions: int = 100) -> None:
        self.clock = FakeClock()
        node = NodeSettings(max_subscriptions_per_principal=subscriptions)
        self.service = simulation(node=node, clock=self.clock).service
        self.streams = DurableStreams(self.service, MemoryFacadeCatalog(), self.clock)

    async def create(self, path: str, content_type: str) -> FacadeEntry:
        entry, _ = await self.streams.create(ALICE, path, StreamConfig(content_type, None,
                                                                       None))
        return entry

    async def append(self, entry: FacadeEntry, body: bytes) -> None:
        await self.streams.append_records(ALICE, entry, to_records(entry.content_type, body,
                                                                   allow_empty_array=False))

    async def reader(self, entry: FacadeEntry, memo: DataMemo, after: int = 0) -> Reader:
        plan = ReadPlan(self.streams, self.clock, 1.0, lambda _: True, ALICE, entry, after,
                        None)
        follow = await plan.follow(after)
        return Reader(sse_frames(plan, follow, follow.close, memo))


class Reader:
    """The events of one connection, parsed as an SSE reader would."""

    def __init__(self, frames: AsyncIterator[bytes]) -> None:
        self.frames = frames
        self.writes: list[bytes] = []

    async def take(self) -> bytes:
        write = await asyncio.wait_for(anext(self.frames), WAIT)
        self.writes.append(write)
        return write

    async def until_offset(self, sequence: int) -> list[tuple[str, str]]:
        events: list[tuple[str, str]] = []
        while True:
            events += parse(await self.take())
            controls = [json.loads(data) for kind, data in events if kind == "control"]
            if controls and controls[-1]["streamNextOffset"].startswith(f"{sequence:016d}"):
                return events

    async def close(self) -> None:
        await self.frames.aclose()  # type: ignore[attr-defined]


def parse(write: bytes) -> list[tuple[str, str]]:
    events = []
    for block in write.decode().split("\n\n"):
        lines = block.split("\n")
        kind = next((line[6:].strip() for line in lines if line.startswith("event:")), "")
        data = "\n".join(line[5:].removeprefix(" ") for line in lines
                         if line.startswith("data:"))
        if kind:
            events.append((kind, data))
    return events


def messages(events: list[tuple[str, str]]) -> list[Any]:
    return [message for kind, data in events if kind == "data" for message in json.loads(data)]


async def test_readers_of_one_stream_get_the_same_bytes_built_once() -> None:
    node, memo = Node(), DataMemo()
    entry = await node.create("shared", "application/json")
    readers = [await node.reader(entry, memo) for _ in range(3)]
    for reader in readers:
        assert json.loads(parse(await reader.take())[0][1])["upToDate"]  # caught up at once
    for n in range(1, 6):
        await node.append(entry, json.dumps({"n": n}).encode())
        writes = [await reader.take() for reader in readers]
        data = [write.split(b"event: control")[0] for write in writes]
        assert data[0].startswith(b"event: data\n") and len(set(data)) == 1
        for write in writes:  # the batch and its control event in one write
            kinds = [kind for kind, _ in parse(write)]
            assert kinds == ["data", "control"]
            assert json.loads(parse(write)[1][1])["upToDate"] is True
    assert memo.builds == 5  # one per batch, not one per reader
    for reader in readers:
        await reader.close()


async def test_a_reader_that_takes_nothing_for_a_while_loses_nothing() -> None:
    node, memo = Node(), DataMemo()
    entry = await node.create("slow", "application/json")
    slow, quick = await node.reader(entry, memo), await node.reader(entry, memo)
    await slow.take()
    await quick.take()
    for n in range(1, 1201):  # past a follow's page (256) and a facade batch (1000)
        await node.append(entry, json.dumps({"n": n}).encode())
    got = await slow.until_offset(1200)
    assert messages(got) == [{"n": n} for n in range(1, 1201)]
    offsets = [json.loads(data)["streamNextOffset"] for kind, data in got if kind == "control"]
    assert offsets == sorted(offsets) and len(set(offsets)) == len(offsets)
    assert messages(await quick.until_offset(1200)) == [{"n": n} for n in range(1, 1201)]
    await slow.close()
    await quick.close()


async def test_binary_text_and_line_breaks_keep_their_encoding() -> None:
    node, memo = Node(), DataMemo()
    binary = await node.create("bin", "application/octet-stream")
    text = await node.create("txt", "text/plain")
    bin_reader, text_reader = await node.reader(binary, memo), await node.reader(text, memo)
    await bin_reader.take()
    await text_reader.take()
    await node.append(binary, b"\x00\xff\n")
    await node.append(text, b"one\r\nevent: control\ndata: {}\rtwo")
    (kind, data), _ = parse(await bin_reader.take())
    assert kind == "data" and base64.b64decode(data) == b"\x00\xff\n"
    write = await text_reader.take()
    assert [kind for kind, _ in parse(write)] == ["data", "control"]  # no forged event
    assert parse(write)[0] == ("data", "one\nevent: control\ndata: {}\ntwo")
    await bin_reader.close()
    await text_reader.close()


async def test_a_connection_holds_one_subscription_slot_until_it_ends() -> None:
    node, memo = Node(subscriptions=2), DataMemo()
    entry = await node.create("slots", "application/json")
    first, second = await node.reader(entry, memo), await node.reader(entry, memo)
    await first.take()
    with pytest.raises(TooManySubscriptions):
        await node.reader(entry, memo)
    await first.close()
    third = await node.reader(entry, memo)
    await second.close()
    await third.close()


async def test_a_closed_stream_sends_its_last_batch_with_the_closure_and_ends() -> None:
    node, memo = Node(), DataMemo()
    entry = await node.create("closing", "application/json")
    await node.append(entry, b"[1,2]")
    await node.streams.append(ALICE, entry, [], True, None)
    reader = await node.reader(entry, memo)
    events = parse(await reader.take())
    assert [kind for kind, _ in events] == ["data", "control"]
    assert json.loads(events[0][1]) == [1, 2]
    assert json.loads(events[1][1]) == {"streamNextOffset": f"{1:016d}_{0:016d}",
                                        "streamClosed": True, "upToDate": True}
    with pytest.raises(StopAsyncIteration):
        await reader.take()


def record(sequence: int, payload: str) -> StoredRecord:
    return StoredRecord(sequence=sequence, content_type="application/json",
                        appended_at=FakeClock().now(), size=len(payload) + 2,
                        payload_json=json.dumps(payload))


def test_the_memo_is_bounded_and_serves_only_the_records_it_was_built_from() -> None:
    memo = DataMemo(max_bytes=1000)
    key = StreamKey("t1", "run", "stream")

    def build(records: list[StoredRecord]) -> bytes:
        return json.dumps([r.payload for r in records]).encode().ljust(100)

    first = [record(1, "a")]
    assert memo.event(key, "application/json", first, build) == build(first)
    assert memo.event(key, "application/json", [record(1, "a")], build) == build(first)
    assert memo.builds == 1  # an equal record is the same record
    assert memo.event(key, "application/json", [record(1, "b")], build) == build(
        [record(1, "b")])  # a stream made again under the key: its own bytes
    assert memo.builds == 2
    for sequence in range(2, 40):
        memo.event(key, "application/json", [record(sequence, "x")], build)
    assert memo.size_bytes <= 1000
    memo.event(key, "application/json", [record(39, "x")], build)
    built = memo.builds
    memo.event(key, "application/json", [record(2, "x")], build)  # the oldest went first
    assert memo.builds == built + 1
    assert memo.event(key, "text/plain", [record(3, "y")], lambda _: b"z" * 600) == b"z" * 600
    assert memo.size_bytes <= 1000  # heavier than the bound: served, never kept
