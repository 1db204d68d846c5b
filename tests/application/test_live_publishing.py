"""Best-effort live chunks: stored nowhere, capped at 7000 bytes, numbered, live readers only."""

from application.follow_frames import LiveFrame, RecordFrame
from application.ports.waking import LiveChunk
from domain.live_chunk import LIVE_CHUNK_MAX_BYTES
from domain.redaction import MASK
from entrypoints.testing.simulation import simulation
from tests.application.support import (
    ALICE,
    FRAME_TIMEOUT,
    RUN,
    append_numbers,
    key,
    make_stream,
    next_non_keepalive,
)


async def test_chunks_reach_a_live_subscriber_with_their_attempt_metadata() -> None:
    sim = simulation()
    await make_stream(sim)
    async with sim.ports.bus.subscribe(key(), live=True) as subscription:
        accepted = await sim.service.live.publish(ALICE, RUN, "s", ["Hel", "lo"],
                                                  source="model_turn", attempt=2, first_index=7)
        first = await subscription.next(FRAME_TIMEOUT)
        second = await subscription.next(FRAME_TIMEOUT)
    assert accepted == 2
    assert isinstance(first, LiveChunk) and isinstance(second, LiveChunk)
    assert [(c.data, c.source, c.attempt, c.index) for c in (first, second)] == [
        ("Hel", "model_turn", 2, 7), ("lo", "model_turn", 2, 8)]
    assert (await sim.ports.store.read_page(key(), 0, 10)).records == ()


async def test_a_chunk_over_7000_bytes_becomes_the_truncation_marker() -> None:
    sim = simulation()
    await make_stream(sim)
    big = "x" * LIVE_CHUNK_MAX_BYTES
    async with sim.ports.bus.subscribe(key(), live=True) as subscription:
        await sim.service.live.publish(ALICE, RUN, "s", [big, "x" * (LIVE_CHUNK_MAX_BYTES - 2)])
        marker = await subscription.next(FRAME_TIMEOUT)
        fits = await subscription.next(FRAME_TIMEOUT)
    assert isinstance(marker, LiveChunk) and isinstance(fits, LiveChunk)
    assert marker.data == {"_truncated": True, "bytes": LIVE_CHUNK_MAX_BYTES + 2}
    assert fits.data == "x" * (LIVE_CHUNK_MAX_BYTES - 2)  # 7000 bytes with its quotes


async def test_seq_grows_monotonically_across_publishes() -> None:
    sim = simulation()
    await make_stream(sim)
    seqs: list[int] = []
    async with sim.ports.bus.subscribe(key(), live=True) as subscription:
        for text in ("a", "b", "c"):
            await sim.service.live.publish(ALICE, RUN, "s", [text, text])
        for _ in range(6):
            chunk = await subscription.next(FRAME_TIMEOUT)
            assert isinstance(chunk, LiveChunk)
            seqs.append(chunk.seq)
    assert seqs == sorted(set(seqs))


async def test_a_request_sent_again_with_its_index_gets_the_same_seq_and_one_without_does_not(
        ) -> None:
    sim = simulation()
    await make_stream(sim)
    turn = {"source": "model_turn", "attempt": 1}
    async with sim.ports.bus.subscribe(key(), live=True) as subscription:
        for _ in range(2):  # a retried request: the same positions
            await sim.service.live.publish(ALICE, RUN, "s", ["Hel", "lo"], **turn, first_index=0)
        for _ in range(2):  # no index: no position, every chunk is new
            await sim.service.live.publish(ALICE, RUN, "s", ["x"], **turn)
        seqs = []
        for _ in range(6):
            chunk = await subscription.next(FRAME_TIMEOUT)
            assert isinstance(chunk, LiveChunk)
            seqs.append(chunk.seq)
    assert seqs == [1, 2, 1, 2, 3, 4]


async def test_a_chunk_published_with_no_reader_is_dropped_and_the_producer_is_not_failed() -> None:
    sim = simulation()
    await make_stream(sim)
    assert await sim.service.live.publish(ALICE, RUN, "s", ["lost"]) == 1
    async with sim.ports.bus.subscribe(key(), live=True) as subscription:
        await sim.service.live.publish(ALICE, RUN, "s", ["seen"])
        chunk = await subscription.next(FRAME_TIMEOUT)
    assert isinstance(chunk, LiveChunk) and chunk.data == "seen"


async def test_a_follow_with_live_gets_live_frames_and_one_without_does_not() -> None:
    sim = simulation()
    await make_stream(sim)
    with_live = await sim.service.follower.open(ALICE, RUN, "s", after=0, live=True)
    without = await sim.service.follower.open(ALICE, RUN, "s", after=0)
    try:
        await sim.service.live.publish(ALICE, RUN, "s", [{"token": "hi"}])
        await append_numbers(sim, 1, 1)
        live_frames, plain_frames = with_live.frames(), without.frames()
        got = [await next_non_keepalive(live_frames), await next_non_keepalive(live_frames)]
        [chunk] = [frame.chunk for frame in got if isinstance(frame, LiveFrame)]
        assert chunk.data == {"token": "hi"}
        assert [f.record.sequence for f in got if isinstance(f, RecordFrame)] == [1]
        await sim.service.live.publish(ALICE, RUN, "s", [{"token": "again"}])
        await append_numbers(sim, 2, 2)
        for expected in (1, 2):
            frame = await next_non_keepalive(plain_frames)
            assert isinstance(frame, RecordFrame) and frame.record.sequence == expected
    finally:
        await with_live.close()
        await without.close()


async def test_side_channel_chunks_pass_the_stream_redaction_before_any_reader() -> None:
    sim = simulation()
    await make_stream(sim, redaction={"mask": ["/user/email"]})
    async with sim.ports.bus.subscribe(key(), live=True) as wakes:
        await sim.service.live.publish(ALICE, RUN, "s", [{"user": {"email": "a@b.c"}}])
        chunk = await wakes.next(1)
    assert isinstance(chunk, LiveChunk)
    assert chunk.data == {"user": {"email": MASK}}


async def test_best_effort_records_are_masked_too() -> None:
    sim = simulation()
    await make_stream(sim, mode="best_effort", redaction={"mask": ["/user/email"]})
    async with sim.ports.bus.subscribe(key(), live=True) as wakes:
        await sim.service.appender.append(ALICE, RUN, "s",
                                          [{"payload": {"user": {"email": "a@b.c"}}}])
        chunk = await wakes.next(1)
    assert isinstance(chunk, LiveChunk)
    assert chunk.data == {"user": {"email": MASK}}
