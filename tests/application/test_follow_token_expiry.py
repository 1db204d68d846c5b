"""A follow ends when the credential that opened it expires (ADR 0023): `EndFrame` with
reason `token_expired` at the last sequence delivered, and nothing after it; a new follow
from there loses and repeats nothing."""

from application.follow_frames import EndFrame, RecordFrame
from application.node import NodeSettings
from entrypoints.testing.simulation import simulation
from tests.application.support import (
    ALICE,
    RUN,
    append_numbers,
    drain,
    following,
    make_stream,
    next_non_keepalive,
    take_records,
)


async def test_a_live_follow_ends_at_its_expiry_and_a_new_one_resumes_from_there() -> None:
    sim = simulation()
    await make_stream(sim)
    await append_numbers(sim, 1, 3)
    async with following(sim.service, ALICE, RUN, "s", after=0, expires_in=0.3) as frames:
        assert await take_records(frames, 3) == [1, 2, 3]
        assert await next_non_keepalive(frames) == EndFrame(3, "token_expired")
        assert await drain(frames) == []
    await append_numbers(sim, 4, 5)
    await sim.service.lifecycle.close(ALICE, RUN, "s")
    resumed = await sim.service.follower.open(ALICE, RUN, "s", after=3, expires_in=60)
    try:
        rest = await drain(resumed.frames())
    finally:
        await resumed.close()
    assert [f.record.sequence for f in rest if isinstance(f, RecordFrame)] == [4, 5]
    assert rest[-1] == EndFrame(5, "closed")


async def test_an_expired_credential_ends_a_backfill_before_its_next_record() -> None:
    sim = simulation(node=NodeSettings(page_size=4))
    await make_stream(sim)
    await append_numbers(sim, 1, 10)
    follow = await sim.service.follower.open(ALICE, RUN, "s", after=2, expires_in=0)
    try:
        assert await drain(follow.frames()) == [EndFrame(2, "token_expired")]
    finally:
        await follow.close()


async def test_a_closed_stream_ends_as_closed_while_its_credential_holds() -> None:
    sim = simulation()
    await make_stream(sim)
    await sim.service.lifecycle.close(ALICE, RUN, "s")
    follow = await sim.service.follower.open(ALICE, RUN, "s", after=0, expires_in=60)
    try:
        assert await drain(follow.frames()) == [EndFrame(0, "closed")]
    finally:
        await follow.close()
