"""A follow ends when the credential that opened it, or the token that credential was minted
from, is revoked (ADR 0060): `EndFrame` with reason `token_revoked` at the last sequence
delivered, as soon as the node's revoked-token list has read the revocation, whatever the
follow is waiting for; a follow opened while a revocation is being read ends too."""

from __future__ import annotations

import asyncio
from dataclasses import replace
from datetime import timedelta

from adapters.memory.clock import FakeClock
from adapters.memory.revoked_tokens import MemoryRevokedTokens
from application.follow_frames import EndFrame
from application.ports.access import Revocation
from application.revocations import RevocationList
from entrypoints.testing.simulation import simulation
from tests.application.support import (
    ALICE,
    RUN,
    TENANT,
    append_numbers,
    drain,
    make_stream,
    next_non_keepalive,
    take_records,
)

API_TOKEN = replace(ALICE, token_id="api-1")
SUBSCRIBE_TOKEN = replace(ALICE, token_id="sub-1", parent_token_id="api-1")
OTHER = replace(ALICE, token_id="api-2")


async def revoke(storage: MemoryRevokedTokens, clock: FakeClock, token_id: str,
                 tenant: str | None = TENANT) -> None:
    await storage.revoke(Revocation(token_id, tenant, clock.now() + timedelta(hours=1)),
                         clock.now())


async def test_revoking_the_parent_ends_a_waiting_follow_and_spares_the_others() -> None:
    sim, clock = simulation(), FakeClock()
    storage, revocations = MemoryRevokedTokens(), RevocationList()
    sim.service.follower.watch_revocations(revocations)
    await make_stream(sim)
    await append_numbers(sim, 1, 2)
    async with revocations.kept_fresh(storage, clock, refresh_seconds=3600):
        doomed = await sim.service.follower.open(SUBSCRIBE_TOKEN, RUN, "s", after=0,
                                                 expires_in=3600)
        spared = await sim.service.follower.open(OTHER, RUN, "s", after=0, expires_in=3600)
        doomed_frames, spared_frames = doomed.frames(), spared.frames()
        try:
            assert await take_records(doomed_frames, 2) == [1, 2]
            assert await take_records(spared_frames, 2) == [1, 2]
            waiting = asyncio.ensure_future(next_non_keepalive(doomed_frames))
            await asyncio.sleep(0.05)  # the follow waits for a wake (keepalive: 15 s)
            await revoke(storage, clock, "api-1")  # the parent, not the token itself
            assert await asyncio.wait_for(waiting, 5) == EndFrame(2, "token_revoked")
            assert await drain(doomed_frames) == []
            await append_numbers(sim, 3, 3)
            assert await take_records(spared_frames, 1) == [3]
        finally:
            await doomed.close()
            await spared.close()


async def test_revoking_the_token_itself_ends_its_follow_mid_backfill() -> None:
    sim, clock = simulation(), FakeClock()
    storage, revocations = MemoryRevokedTokens(), RevocationList()
    sim.service.follower.watch_revocations(revocations)
    await make_stream(sim)
    await append_numbers(sim, 1, 5)
    async with revocations.kept_fresh(storage, clock, refresh_seconds=3600):
        follow = await sim.service.follower.open(SUBSCRIBE_TOKEN, RUN, "s", after=0)
        frames = follow.frames()
        try:
            assert await take_records(frames, 1) == [1]
            await revoke(storage, clock, "sub-1", tenant=None)  # in every tenant
            await asyncio.sleep(0.05)  # the ring is read on the loop
            assert await drain(frames) == [EndFrame(1, "token_revoked")]
        finally:
            await follow.close()


async def test_a_follow_opened_with_a_credential_already_revoked_ends_at_once() -> None:
    """Authentication checked the list before the read that revoked the token: the follow
    that request opens must not outlive the revocation."""
    sim, clock = simulation(), FakeClock()
    storage, revocations = MemoryRevokedTokens(), RevocationList()
    sim.service.follower.watch_revocations(revocations)
    await make_stream(sim)
    await append_numbers(sim, 1, 3)
    async with revocations.kept_fresh(storage, clock, refresh_seconds=3600):
        await revoke(storage, clock, "api-1")
        await asyncio.sleep(0.05)
        assert revocations.refuses_principal(SUBSCRIBE_TOKEN)
        assert revocations.refuses_principal(API_TOKEN)
        assert not revocations.refuses_principal(OTHER)
        follow = await sim.service.follower.open(API_TOKEN, RUN, "s", after=0)
        try:
            assert await drain(follow.frames()) == [EndFrame(0, "token_revoked")]
        finally:
            await follow.close()
