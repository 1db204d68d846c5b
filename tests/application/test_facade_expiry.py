"""The facade's expiry sweep: a stream whose TTL or Expires-At passed is deleted even if
nobody looks at it again; a renewed, re-created or held one stays (`FacadeExpiry`)."""

from __future__ import annotations

from datetime import timedelta

import pytest

from adapters.memory.clock import FakeClock
from adapters.memory.durable_streams import MemoryFacadeCatalog
from application.durable_streams.expiry import FacadeExpiry
from application.durable_streams.facade import DurableStreams
from application.durable_streams.forks import FACADE_STREAM
from application.durable_streams.stream_config import StreamConfig
from application.service import RunnelService
from domain.errors import NotFound
from domain.principal import Principal, Scope
from entrypoints.testing.simulation import simulation

WRITER = Principal(sub="alice", tenant="t1",
                   scopes=frozenset({Scope.READ.value, Scope.WRITE.value}))
ADMIN = Principal(sub="root", tenant="t1", scopes=frozenset({Scope.ADMIN.value}))
MINUTE = StreamConfig("text/plain", ttl_seconds=60, expires_at=None)


class Facade:
    def __init__(self, page: int = 100) -> None:
        self.clock = FakeClock()
        self.service: RunnelService = simulation(clock=self.clock).service
        self.catalog = MemoryFacadeCatalog()
        self.streams = DurableStreams(self.service, self.catalog, self.clock)
        self.expiry = FacadeExpiry(self.streams, self.catalog, self.clock, page=page)

    async def create(self, path: str, config: StreamConfig = MINUTE,
                     principal: Principal = WRITER) -> str:
        entry, created = await self.streams.create(principal, path, config)
        assert created
        await self.service.appender.append(principal, entry.run_id, FACADE_STREAM,
                                           [{"payload": path}])
        return entry.run_id

    async def stream_exists(self, run_id: str, principal: Principal = WRITER) -> bool:
        """Whether the run's stream is there and not erased (its records kept)."""
        stream = await self.service.definitions.get(principal, run_id, FACADE_STREAM)
        return not stream.erased


async def test_an_expired_stream_nobody_looks_at_is_deleted_with_its_run() -> None:
    facade = Facade(page=2)
    expired = [await facade.create(f"ttl-{n}") for n in range(5)]
    dated = await facade.create("dated", StreamConfig(
        "text/plain", None, facade.clock.now() + timedelta(seconds=30)))
    kept = await facade.create("forever", StreamConfig("text/plain", None, None))
    later = await facade.create("later", StreamConfig(
        "text/plain", None, facade.clock.now() + timedelta(days=1)))
    other_tenant = await facade.create("ttl-0", principal=Principal(
        sub="bob", tenant="t2", scopes=WRITER.scopes))
    assert await facade.expiry.sweep() == 0

    facade.clock.advance(61)
    assert await facade.expiry.sweep() == 7  # pages of 2, one pass, both tenants
    for run_id in [*expired, dated]:
        assert not await facade.stream_exists(run_id)
    assert not await facade.stream_exists(other_tenant, Principal(
        sub="bob", tenant="t2", scopes=WRITER.scopes))
    assert await facade.catalog.find("t1", "ttl-3") is None
    assert await facade.stream_exists(kept) and await facade.stream_exists(later)
    assert await facade.expiry.sweep() == 0


async def test_a_renewed_or_re_created_stream_is_not_deleted_by_a_stale_listing() -> None:
    facade = Facade()
    await facade.create("renewed")
    await facade.create("again")
    facade.clock.advance(61)
    listed = dict((entry.path, entry) for _, entry in
                  await facade.catalog.expired(facade.clock.now(), None, 10))
    # Between the listing and each entry's turn: a read renews one, a PUT re-creates the
    # other (a look at an expired entry deletes it, then the path starts afresh).
    await facade.catalog.touch("t1", "renewed", facade.clock.now())
    with pytest.raises(NotFound):
        await facade.streams.find(WRITER, "again")
    fresh = await facade.create("again")

    assert not await facade.streams.expire("t1", listed["renewed"])
    assert not await facade.streams.expire("t1", listed["again"])
    found = await facade.catalog.find("t1", "again")
    assert found is not None and found.run_id == fresh
    assert await facade.stream_exists(fresh)


async def test_a_held_stream_outlives_its_expiry_until_the_hold_is_lifted() -> None:
    facade = Facade()
    held = await facade.create("held")
    await facade.service.lifecycle.set_legal_hold(ADMIN, held, FACADE_STREAM, True, "audit")
    facade.clock.advance(61)
    assert await facade.expiry.sweep() == 0
    assert await facade.stream_exists(held)
    assert await facade.catalog.find("t1", "held") is not None

    await facade.service.lifecycle.set_legal_hold(ADMIN, held, FACADE_STREAM, False, None)
    assert await facade.expiry.sweep() == 1
    assert not await facade.stream_exists(held)
