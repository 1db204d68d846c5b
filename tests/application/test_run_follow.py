"""A run follow merges every stream of a run the caller may read into one subscription:
per-stream order, a compound cursor that resumes each stream exactly, one slot, later
streams joining, unreadable streams absent, per-stream ends and the run's end (ADR 0073)."""

import asyncio
from collections.abc import AsyncIterator
from dataclasses import replace
from datetime import timedelta

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from adapters.memory.clock import FakeClock
from adapters.memory.revoked_tokens import MemoryRevokedTokens
from application.follow_frames import EndFrame, KeepaliveFrame, LiveFrame, RecordFrame, ResyncFrame
from application.node import NodeSettings
from application.ports.access import Revocation
from application.ports.errors import NodeDraining
from application.ports.waking import LiveDraft
from application.revocations import RevocationList
from application.run_follow import FRAMES_AHEAD, RunEndFrame, RunFollow, RunFrame, StreamFrame
from domain.errors import (
    FutureCursor,
    NotFound,
    TooManyStreamsToFollow,
    TooManySubscriptions,
)
from domain.principal import Principal
from domain.run_cursor import RunCursor
from domain.run_filter import RunFilter
from entrypoints.testing.simulation import Simulation, simulation
from tests.application.support import (
    ADMIN,
    ALICE,
    BOB,
    FRAME_TIMEOUT,
    RUN,
    append_numbers,
    definition,
    fake_clock,
    key,
    make_stream,
)

FAST = NodeSettings(keepalive_seconds=0.05)
"""Ticks come quickly: a stream created later joins within a tick."""
ONLY_ALICE = {"authorization": {"readers": ["alice"], "writers": ["*"]}}


async def open_run(sim: Simulation, principal: Principal = ALICE, cursor: str = "",
                   **options: object) -> RunFollow:
    return await sim.service.run_follower.open(principal, RUN, RunCursor.parse(cursor),
                                               **options)  # type: ignore[arg-type]


async def next_frame(frames: AsyncIterator[RunFrame]) -> RunFrame:
    while True:
        frame = await asyncio.wait_for(anext(frames), FRAME_TIMEOUT)
        if not isinstance(frame, KeepaliveFrame):
            return frame


async def take(frames: AsyncIterator[RunFrame], count: int) -> list[tuple[str, int]]:
    taken: list[tuple[str, int]] = []
    while len(taken) < count:
        frame = await next_frame(frames)
        assert isinstance(frame, StreamFrame) and isinstance(frame.frame, RecordFrame), frame
        taken.append((frame.stream_id, frame.frame.record.sequence))
    return taken


async def test_streams_are_merged_in_their_order_and_each_record_carries_the_cursor() -> None:
    sim = simulation()
    await make_stream(sim, "a")
    await make_stream(sim, "b")
    await append_numbers(sim, 1, 3, "a")
    await append_numbers(sim, 1, 2, "b")
    follow = await open_run(sim)
    frames = follow.frames()
    try:
        seen = await take(frames, 5)
        assert [seq for stream, seq in seen if stream == "a"] == [1, 2, 3]
        assert [seq for stream, seq in seen if stream == "b"] == [1, 2]
        assert follow.cursor.text() == "a=3,b=2"
        await append_numbers(sim, 4, 4, "a")
        frame = await next_frame(frames)
        assert isinstance(frame, StreamFrame)
        assert frame.cursor.text() == "a=4,b=2"
    finally:
        await follow.close()


async def test_a_compound_cursor_resumes_each_stream_exactly() -> None:
    sim = simulation()
    for stream_id in ("a", "b", "c"):
        await make_stream(sim, stream_id)
        await append_numbers(sim, 1, 4, stream_id)
    follow = await open_run(sim, cursor="a=2,c=4")
    try:
        seen = await take(follow.frames(), 6)
    finally:
        await follow.close()
    assert sorted(seen) == [("a", 3), ("a", 4), ("b", 1), ("b", 2), ("b", 3), ("b", 4)]


async def test_the_run_follow_takes_one_slot_whatever_its_streams() -> None:
    sim = simulation(node=NodeSettings(max_subscriptions_per_principal=1))
    for stream_id in ("a", "b", "c"):
        await make_stream(sim, stream_id)
    follow = await open_run(sim)
    assert sim.service.follower.slots.held == 1
    with pytest.raises(TooManySubscriptions):
        await open_run(sim)
    with pytest.raises(TooManySubscriptions):
        await sim.service.follower.open(ALICE, RUN, "a", after=0)
    await follow.close()
    assert sim.service.follower.slots.held == 0
    single = await sim.service.follower.open(ALICE, RUN, "a", after=0)
    await single.close()


async def test_a_slow_reader_holds_a_bounded_number_of_frames_per_stream() -> None:
    sim = simulation()
    for stream_id in ("a", "b"):
        await make_stream(sim, stream_id)
        for first in range(1, 400, 100):
            await append_numbers(sim, first, first + 99, stream_id)
    follow = await open_run(sim)
    frames = follow.frames()
    try:
        seen = await take(frames, 1)
        for _ in range(50):  # the streams run ahead as far as they may
            await asyncio.sleep(0)
        assert 0 < follow.queued <= 2 * FRAMES_AHEAD
        seen += await take(frames, 799)
        for stream_id in "ab":
            assert [n for s, n in seen if s == stream_id] == list(range(1, 401))
    finally:
        await follow.close()


async def test_a_refused_open_leaves_no_slot_and_no_registration() -> None:
    sim = simulation(node=NodeSettings(max_subscriptions_per_principal=1))
    await make_stream(sim, "a")
    await make_stream(sim, "b")
    await append_numbers(sim, 1, 2, "b")
    with pytest.raises(FutureCursor):
        await open_run(sim, cursor="b=9")
    assert sim.service.follower.slots.held == 0
    assert sim.ports.bus.hub.reader_count == 0


async def test_streams_the_caller_may_not_read_are_absent_even_from_the_cursor() -> None:
    sim = simulation()
    await make_stream(sim, "open")
    await make_stream(sim, "secret", **ONLY_ALICE)
    await append_numbers(sim, 1, 2, "open")
    await append_numbers(sim, 1, 2, "secret")
    # Bob names the secret stream in his cursor, even beyond its head: nothing shows.
    follow = await open_run(sim, BOB, cursor="secret=99")
    frames = follow.frames()
    try:
        assert await take(frames, 2) == [("open", 1), ("open", 2)]
        assert follow.cursor.text() == "open=2"
        assert follow.stream_ids == {"open"}
        await append_numbers(sim, 3, 3, "secret")
        await append_numbers(sim, 3, 3, "open")
        assert await take(frames, 1) == [("open", 3)]
    finally:
        await follow.close()


async def test_egress_pins_and_admins_without_a_readers_entry_are_absent_too() -> None:
    sim = simulation()
    await make_stream(sim, "here")
    await make_stream(sim, "eu", placement={"metadata_home": "local",
                                            "client_egress_regions": ["eu"]})
    follow = await open_run(sim)
    assert follow.stream_ids == {"here"}
    await follow.close()
    admin = await open_run(sim, ADMIN)  # an admin reads content only where the pin names it
    assert admin.stream_ids == {"here"}
    await admin.close()
    private = await sim.service.definitions.create(
        ALICE, RUN, definition("mine", **ONLY_ALICE))
    assert private[1]
    admin = await open_run(sim, ADMIN)
    assert admin.stream_ids == {"here"}
    await admin.close()


async def test_another_tenants_run_and_an_unknown_run_are_not_found() -> None:
    sim = simulation()
    await make_stream(sim, "a")
    stranger = Principal("alice", "t2", ALICE.scopes)
    with pytest.raises(NotFound):
        await open_run(sim, stranger)
    with pytest.raises(NotFound):
        await sim.service.run_follower.open(ALICE, "nothing-here", RunCursor())
    bound = Principal("alice", "t1", ALICE.scopes, runs=frozenset({"other"}))
    with pytest.raises(NotFound):
        await open_run(sim, bound)
    assert sim.service.follower.slots.held == 0


async def test_a_stream_created_after_the_subscription_joins_from_its_start() -> None:
    sim = simulation(node=FAST)
    await make_stream(sim, "a")
    follow = await open_run(sim)
    frames = follow.frames()
    try:
        await make_stream(sim, "late")
        await append_numbers(sim, 1, 2, "late")
        assert await take(frames, 2) == [("late", 1), ("late", 2)]
        assert follow.cursor.text() == "late=2"
        await make_stream(sim, "hidden", **ONLY_ALICE)
        await append_numbers(sim, 1, 1, "hidden")
        assert await take(frames, 1) == [("hidden", 1)]
    finally:
        await follow.close()


async def test_a_later_stream_the_caller_may_not_read_never_shows() -> None:
    sim = simulation(node=FAST)
    await make_stream(sim, "a")
    follow = await open_run(sim, BOB)
    frames = follow.frames()
    try:
        await make_stream(sim, "secret", **ONLY_ALICE)
        await append_numbers(sim, 1, 3, "secret")
        for _ in range(4):  # a few ticks: each re-lists the run
            assert isinstance(await asyncio.wait_for(anext(frames), FRAME_TIMEOUT),
                              KeepaliveFrame)
        await append_numbers(sim, 1, 1, "a")
        assert await take(frames, 1) == [("a", 1)]
        assert follow.stream_ids == {"a"}
    finally:
        await follow.close()


async def test_the_filter_narrows_by_stream_id_and_content_class() -> None:
    sim = simulation()
    await make_stream(sim, "a")
    await make_stream(sim, "b")
    await sim.service.definitions.create(
        ALICE, RUN, {"stream_id": "t", "content_class": "tool.calls"})
    by_id = await open_run(sim, wanted=RunFilter.parse("a,t", None))
    assert by_id.stream_ids == {"a", "t"}
    await by_id.close()
    by_class = await open_run(sim, wanted=RunFilter.parse(None, " Tool.Calls"))
    assert by_class.stream_ids == {"t"}
    await by_class.close()


async def test_a_closed_stream_ends_alone_and_the_others_go_on() -> None:
    sim = simulation()
    await make_stream(sim, "a")
    await make_stream(sim, "b")
    await append_numbers(sim, 1, 1, "a")
    follow = await open_run(sim)
    frames = follow.frames()
    try:
        assert await take(frames, 1) == [("a", 1)]
        await sim.service.lifecycle.close(ALICE, RUN, "a")
        ended = await next_frame(frames)
        assert isinstance(ended, StreamFrame) and ended.stream_id == "a"
        assert ended.frame == EndFrame(1)
        await append_numbers(sim, 1, 1, "b")
        assert await take(frames, 1) == [("b", 1)]
        assert follow.cursor.text() == "a=1,b=1"
    finally:
        await follow.close()


async def test_erasing_the_run_ends_every_stream_then_the_run_follow() -> None:
    sim = simulation(node=FAST)
    await make_stream(sim, "a")
    await make_stream(sim, "b")
    await append_numbers(sim, 1, 2, "a")
    follow = await open_run(sim)
    frames = follow.frames()
    try:
        assert await take(frames, 2) == [("a", 1), ("a", 2)]
        await sim.service.lifecycle.erase_run(ADMIN, RUN)
        rest = [frame async for frame in frames if not isinstance(frame, KeepaliveFrame)]
    finally:
        await follow.close()
    assert {(frame.stream_id, type(frame.frame)) for frame in rest[:-1]
            if isinstance(frame, StreamFrame)} == {("a", EndFrame), ("b", EndFrame)}
    assert rest[-1] == RunEndFrame("erased", RunCursor.parse("a=2"))
    assert sim.service.follower.slots.held == 0


async def test_a_pruned_stream_resyncs_alone() -> None:
    sim = simulation()
    await make_stream(sim, "a", retention={"max_records": 2})
    await make_stream(sim, "b")
    await append_numbers(sim, 1, 5, "a")
    await append_numbers(sim, 1, 1, "b")
    await sim.service.retention.prune(key("a"))
    follow = await open_run(sim, cursor="a=1")
    frames = follow.frames()
    try:
        first = await next_frame(frames)
        assert isinstance(first, StreamFrame) and first.stream_id == "a"
        assert first.frame == ResyncFrame(1, 4, 5)
        assert await take(frames, 1) == [("b", 1)]
    finally:
        await follow.close()


async def test_live_chunks_come_only_when_asked_and_name_their_stream() -> None:
    sim = simulation()
    await make_stream(sim, "a")
    follow = await open_run(sim, live=True)
    frames = follow.frames()
    try:
        waiting = asyncio.ensure_future(next_frame(frames))
        await asyncio.sleep(0.01)
        await sim.ports.bus.publish_live([LiveDraft(key("a"), {"t": "hi"})])
        frame = await waiting
        assert isinstance(frame, StreamFrame) and isinstance(frame.frame, LiveFrame)
        assert frame.stream_id == "a" and frame.frame.chunk.data == {"t": "hi"}
    finally:
        await follow.close()


async def test_drain_revocation_and_expiry_end_the_run_follow_with_its_cursor() -> None:
    sim = simulation(node=NodeSettings(keepalive_seconds=3600))
    await make_stream(sim, "a")
    await append_numbers(sim, 1, 1, "a")
    expiring = await open_run(sim, expires_in=0.05)
    frames = expiring.frames()
    assert await take(frames, 1) == [("a", 1)]
    assert await next_frame(frames) == RunEndFrame("token_expired", RunCursor.parse("a=1"))
    await expiring.close()
    follow = await open_run(sim)
    frames = follow.frames()
    assert await take(frames, 1) == [("a", 1)]
    waiting = asyncio.ensure_future(next_frame(frames))
    await asyncio.sleep(0.01)
    assert sim.service.follower.drain() == 1
    assert await waiting == RunEndFrame("shutdown", RunCursor.parse("a=1"))
    await follow.close()
    assert sim.service.follower.open_follows == 0
    with pytest.raises(NodeDraining):
        await open_run(sim)


async def test_more_streams_than_a_cursor_may_name_are_refused_or_end_the_follow() -> None:
    sim = simulation(node=FAST)
    wide = "w" * 120
    for index in range(29):  # 29 entries of 122-character ids pass 4096 bytes at their widest
        await make_stream(sim, f"{wide}{index:02d}")
    with pytest.raises(TooManyStreamsToFollow):
        await open_run(sim)
    narrow = await open_run(sim, wanted=RunFilter.parse(f"{wide}00,{wide}01", None))
    await narrow.close()
    await sim.service.definitions.create(ALICE, "run-2", definition("a"))
    few = await sim.service.run_follower.open(ALICE, "run-2", RunCursor())
    frames = few.frames()
    try:
        for index in range(64):
            await make_stream(sim, f"s{index}", "run-2")
        frame = await next_frame(frames)
        assert frame == RunEndFrame("too_many_streams", RunCursor())
    finally:
        await few.close()


def test_model_every_record_once_in_order_per_stream_across_random_disconnects() -> None:
    """Against the model of per-stream follows: whatever the appends, closes, later streams
    and disconnects (each resumed from the last record frame's cursor, as `Last-Event-ID`
    does), each readable stream's records arrive once each, in order, and a closed one
    ends after its last; an unreadable stream's never do."""
    run_model_property()


steps = st.lists(st.one_of(
    st.tuples(st.just("append"), st.integers(0, 5), st.integers(1, 7)),
    st.tuples(st.just("create"), st.booleans(), st.just(0)),
    st.tuples(st.just("read"), st.integers(1, 9), st.just(0)),
    st.tuples(st.just("reconnect"), st.just(0), st.just(0)),
    st.tuples(st.just("close"), st.integers(0, 5), st.just(0)),
), max_size=25)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(program=steps)
def run_model_property(program: list[tuple[str, int | bool, int]]) -> None:
    asyncio.run(model_scenario(program))


async def model_scenario(program: list[tuple[str, int | bool, int]]) -> None:
    sim = simulation(node=NodeSettings(keepalive_seconds=0.02, page_size=3))
    streams: list[str] = []
    appended: dict[str, int] = {}
    readable: set[str] = set()
    closed: set[str] = set()
    delivered: dict[str, list[int]] = {}
    ended: dict[str, int] = {}

    async def create(secret: bool) -> None:
        stream_id = f"s{len(streams)}"
        await make_stream(sim, stream_id, **(ONLY_ALICE if secret else {}))
        streams.append(stream_id)
        appended[stream_id] = 0
        if not secret:
            readable.add(stream_id)

    def outstanding() -> int:
        return sum(appended[s] for s in readable) - sum(map(len, delivered.values()))

    await create(False)
    cursor = ""
    follow = await open_run(sim, BOB, cursor)
    frames = follow.frames()

    async def read(count: int) -> None:
        nonlocal cursor
        taken, wanted = 0, min(count, outstanding())
        while taken < wanted:
            frame = await next_frame(frames)
            assert isinstance(frame, StreamFrame), frame
            if isinstance(frame.frame, EndFrame):
                assert frame.stream_id in closed
                assert frame.frame.last_sequence == appended[frame.stream_id]
                ended[frame.stream_id] = frame.frame.last_sequence
                continue
            assert isinstance(frame.frame, RecordFrame), frame
            assert frame.stream_id not in ended
            delivered.setdefault(frame.stream_id, []).append(frame.frame.record.sequence)
            cursor = frame.cursor.text()
            taken += 1

    try:
        for op, first, second in program:
            if op == "append":
                stream_id = streams[int(first) % len(streams)]
                if stream_id in closed:
                    continue
                await append_numbers(sim, 1, second, stream_id)
                appended[stream_id] += second
            elif op == "close":
                stream_id = streams[int(first) % len(streams)]
                await sim.service.lifecycle.close(ALICE, RUN, stream_id)
                closed.add(stream_id)
            elif op == "create":
                await create(bool(first))
            elif op == "read":
                await read(int(first))
            else:
                await frames.aclose()  # type: ignore[attr-defined]
                await follow.close()
                ended.clear()  # a resumed run follow sends a closed stream's end again
                follow = await open_run(sim, BOB, cursor)
                frames = follow.frames()
        await read(outstanding())
        for stream_id in streams:
            if stream_id not in closed:
                await sim.service.lifecycle.close(ALICE, RUN, stream_id)
                closed.add(stream_id)
        while set(ended) != readable:  # nothing more but each readable stream's end
            frame = await next_frame(frames)
            assert isinstance(frame, StreamFrame) and isinstance(frame.frame, EndFrame), frame
            assert frame.frame.last_sequence == appended[frame.stream_id]
            ended[frame.stream_id] = frame.frame.last_sequence
    finally:
        await follow.close()
    assert delivered == {s: list(range(1, appended[s] + 1)) for s in readable
                         if appended[s]}
    assert sim.service.follower.slots.held == 0


async def test_revoking_the_token_ends_the_run_follow_at_once_with_its_cursor() -> None:
    sim, clock = simulation(node=NodeSettings(keepalive_seconds=3600)), FakeClock()
    storage, revocations = MemoryRevokedTokens(), RevocationList()
    sim.service.follower.watch_revocations(revocations)
    await make_stream(sim, "a")
    await append_numbers(sim, 1, 2, "a")
    holder = replace(ALICE, token_id="api-1")
    async with revocations.kept_fresh(storage, clock, refresh_seconds=3600):
        follow = await open_run(sim, holder)
        spared = await open_run(sim, replace(ALICE, token_id="api-2"))
        frames = follow.frames()
        try:
            assert await take(frames, 2) == [("a", 1), ("a", 2)]
            waiting = asyncio.ensure_future(next_frame(frames))
            await asyncio.sleep(0.05)  # the run follow waits (its tick is an hour away)
            await storage.revoke(Revocation("api-1", "t1", clock.now() + timedelta(hours=1)),
                                 clock.now())
            assert await asyncio.wait_for(waiting, FRAME_TIMEOUT) == RunEndFrame(
                "token_revoked", RunCursor.parse("a=2"))
            assert [frame async for frame in frames] == []
            assert await take(spared.frames(), 2) == [("a", 1), ("a", 2)]
        finally:
            await follow.close()
            await spared.close()
    assert sim.service.follower.slots.held == 0


async def test_deleted_and_expired_streams_are_absent_as_to_a_single_stream_follow() -> None:
    sim = simulation(node=FAST)
    for stream_id in ("gone", "kept"):
        await make_stream(sim, stream_id)
        await append_numbers(sim, 1, 2, stream_id)
    await make_stream(sim, "brief", expires_after_seconds=60)
    await append_numbers(sim, 1, 2, "brief")
    await sim.service.stream_deletion.delete(ADMIN, RUN, "gone")
    fake_clock(sim).advance(60)  # "brief" is past its expiry, not yet swept
    follow = await open_run(sim)
    frames = follow.frames()
    try:
        assert await take(frames, 2) == [("kept", 1), ("kept", 2)]
        await append_numbers(sim, 3, 3, "kept")
        assert await take(frames, 1) == [("kept", 3)]
        assert follow.cursor.text() == "kept=3"
    finally:
        await follow.close()
