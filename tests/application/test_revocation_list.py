"""A node's copy of the revoked-token list: read before serving, rung by revocations, kept
fresh on an interval when rings are lost, and kept when the storage does not answer."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from datetime import datetime, timedelta

import pytest

from adapters.memory.clock import FakeClock
from adapters.memory.revoked_tokens import MemoryRevokedTokens
from application.ports.access import Revocation
from application.revocations import RevocationList

DEADLINE_SECONDS = 30.0


class Deaf(MemoryRevokedTokens):
    """Storage whose doorbell never rings (a lost NOTIFY), and that may stop answering."""

    def __init__(self) -> None:
        super().__init__()
        self.down = False

    def watch(self, ring: Callable[[], None]) -> None:
        pass

    async def active(self, now: datetime) -> Sequence[Revocation]:
        if self.down:
            raise ConnectionRefusedError("storage down")
        return await super().active(now)


async def until(condition: Callable[[], bool]) -> None:
    async with asyncio.timeout(DEADLINE_SECONDS):
        while not condition():
            await asyncio.sleep(0.01)


def expiry(clock: FakeClock) -> datetime:
    return clock.now() + timedelta(hours=1)


async def test_a_revocation_made_before_the_node_starts_is_refused_from_the_first_request(
        ) -> None:
    clock, storage, copy = FakeClock(), MemoryRevokedTokens(), RevocationList()
    await storage.revoke(Revocation("j1", "t1", expiry(clock)), clock.now())
    await storage.revoke(Revocation("j2", None, expiry(clock)), clock.now())
    async with copy.kept_fresh(storage, clock, refresh_seconds=3600):
        assert copy.refuses("t1", "j1")
        assert not copy.refuses("t2", "j1")  # revoked in t1 only
        assert copy.refuses("t1", "j2") and copy.refuses("t9", "j2")  # in every tenant
        assert not copy.refuses("t1", "j3")
        assert not copy.refuses("t1", None)  # a token without jti cannot be revoked


async def test_a_ring_makes_the_copy_read_again_at_once() -> None:
    clock, storage, copy = FakeClock(), MemoryRevokedTokens(), RevocationList()
    async with copy.kept_fresh(storage, clock, refresh_seconds=3600):
        assert not copy.refuses("t1", "j1")
        await storage.revoke(Revocation("j1", "t1", expiry(clock)), clock.now())
        await until(lambda: copy.refuses("t1", "j1"))


async def test_without_rings_the_interval_still_brings_the_revocation() -> None:
    clock, storage, copy = FakeClock(), Deaf(), RevocationList()
    async with copy.kept_fresh(storage, clock, refresh_seconds=0.05):
        await storage.revoke(Revocation("j1", "t1", expiry(clock)), clock.now())
        await until(lambda: copy.refuses("t1", "j1"))


async def test_an_expired_revocation_leaves_the_copy() -> None:
    clock, storage, copy = FakeClock(), Deaf(), RevocationList()
    await storage.revoke(Revocation("j1", "t1", expiry(clock)), clock.now())
    async with copy.kept_fresh(storage, clock, refresh_seconds=0.05):
        assert copy.refuses("t1", "j1")
        clock.advance(3600)
        await until(lambda: not copy.refuses("t1", "j1"))


async def test_storage_that_stops_answering_leaves_the_last_copy_in_place() -> None:
    clock, storage, copy = FakeClock(), Deaf(), RevocationList()
    await storage.revoke(Revocation("j1", "t1", expiry(clock)), clock.now())
    async with copy.kept_fresh(storage, clock, refresh_seconds=0.02):
        storage.down = True
        reads = copy.reads
        await until(lambda: copy.reads >= reads + 3)
        assert copy.refuses("t1", "j1")


async def test_a_node_does_not_start_without_the_list() -> None:
    storage, copy = Deaf(), RevocationList()
    storage.down = True
    with pytest.raises(ConnectionRefusedError):
        async with copy.kept_fresh(storage, FakeClock(), refresh_seconds=1):
            pass
