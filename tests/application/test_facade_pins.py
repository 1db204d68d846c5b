"""Facade streams keep the native pins (ADR 0070): readers and writers default to the
creator, a tenant template or the creator's `Runnel-Definition` may say otherwise, and every
route of the facade answers another principal of the same tenant 403."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest

from adapters.memory.clock import FakeClock
from adapters.memory.durable_streams import MemoryFacadeCatalog
from application.durable_streams.definition import facade_definition
from application.durable_streams.facade import DurableStreams, StreamConfig
from application.durable_streams.forks import FACADE_STREAM
from domain.errors import DefinitionConflict, Forbidden, InvalidDefinition, NotFound
from domain.principal import Principal, Scope
from entrypoints.testing.simulation import simulation

BOTH = frozenset({Scope.READ.value, Scope.WRITE.value})
ALICE = Principal(sub="alice", tenant="t1", scopes=BOTH)
BOB = Principal(sub="bob", tenant="t1", scopes=BOTH)
ROOT = Principal(sub="root", tenant="t1", scopes=frozenset({Scope.ADMIN.value}))
TEXT = "application/json"


class Facade:
    def __init__(self, templates: Mapping[str, Mapping[str, Any]] | None = None) -> None:
        self.clock = FakeClock()
        self.service = simulation(clock=self.clock).service
        self.catalog = MemoryFacadeCatalog()
        self.streams = DurableStreams(self.service, self.catalog, self.clock, templates)

    async def create(self, principal: Principal, path: str,
                     asked: dict[str, Any] | None = None, ttl: int | None = None,
                     forked_from: str | None = None) -> bool:
        _, created = await self.streams.create(principal, path, StreamConfig(
            TEXT, ttl, None, forked_from=forked_from, definition=asked))
        return created

    async def append(self, principal: Principal, path: str, text: str) -> None:
        entry, _ = await self.streams.find_for_writing(principal, path)
        await self.streams.append(principal, entry, [{"payload": text}], False, None)

    async def read(self, principal: Principal, path: str) -> list[Any]:
        entry = await self.streams.find(principal, path)
        page = await self.streams.read(principal, entry, 0, 100)
        return [record.payload for record in page.records]

    async def pins(self, path: str, tenant: str = "t1") -> tuple[tuple[str, ...], tuple[str, ...]]:
        admin = Principal(sub="root", tenant=tenant, scopes=ROOT.scopes)
        entry = await self.streams.find(admin, path)
        stream = await self.service.definitions.get(admin, entry.run_id, FACADE_STREAM)
        pins = stream.definition.authorization
        return pins.readers, pins.writers


async def test_by_default_only_the_creator_reads_writes_recreates_forks_and_deletes() -> None:
    facade = Facade()
    assert await facade.create(ALICE, "p")
    await facade.append(ALICE, "p", "mine")
    assert await facade.pins("p") == (("alice",), ("alice",))
    with pytest.raises(Forbidden):
        await facade.read(BOB, "p")
    with pytest.raises(Forbidden):
        await facade.append(BOB, "p", "theirs")
    with pytest.raises(Forbidden):  # a plain append's gate: the pins alone
        await facade.streams.find_writable(BOB, "p")
    with pytest.raises(Forbidden):
        await facade.streams.status(BOB, await facade.streams.find(BOB, "p"))
    with pytest.raises(Forbidden):
        await facade.create(BOB, "p")
    with pytest.raises(Forbidden):
        await facade.create(BOB, "copy", forked_from="p")
    assert await facade.catalog.find("t1", "copy") is None
    with pytest.raises(Forbidden):
        await facade.streams.delete(BOB, "p")
    assert await facade.read(ALICE, "p") == ["mine"]
    assert not await facade.create(ALICE, "p")  # the creator's re-create is 200
    await facade.streams.delete(ALICE, "p")
    with pytest.raises(NotFound):
        await facade.read(ALICE, "p")


async def test_an_admin_deletes_a_stream_but_reads_none_of_its_content() -> None:
    facade = Facade()
    await facade.create(ALICE, "p")
    await facade.append(ALICE, "p", "mine")
    with pytest.raises(Forbidden):
        await facade.read(ROOT, "p")
    await facade.streams.delete(ROOT, "p")
    with pytest.raises(NotFound):
        await facade.streams.find(ALICE, "p")


async def test_the_creator_names_readers_and_writers_keep_their_own_default() -> None:
    facade = Facade()
    await facade.create(ALICE, "p", {"authorization": {"readers": ["alice", "bob"]}})
    assert await facade.pins("p") == (("alice", "bob"), ("alice",))
    await facade.append(ALICE, "p", "for bob")
    assert await facade.read(BOB, "p") == ["for bob"]
    with pytest.raises(Forbidden):
        await facade.append(BOB, "p", "from bob")


async def test_a_writer_who_is_no_reader_appends_and_recreates_but_reads_nothing() -> None:
    facade = Facade()
    await facade.create(ALICE, "p", {"authorization": {"writers": ["alice", "bob"]}})
    await facade.append(BOB, "p", "from bob")
    assert not await facade.create(BOB, "p")
    with pytest.raises(Forbidden):
        await facade.read(BOB, "p")
    assert await facade.read(ALICE, "p") == ["from bob"]


async def test_a_tenant_template_comes_before_the_creator_and_the_own_tenant_before_any() -> None:
    open_to_all = {"authorization": {"readers": ["*"], "writers": ["*"]}}
    facade = Facade({"*": {"authorization": {"readers": ["*"]}}, "t1": open_to_all})
    await facade.create(ALICE, "open")
    await facade.append(BOB, "open", "anyone")
    assert await facade.read(BOB, "open") == ["anyone"]
    await facade.create(ALICE, "closed", {"authorization": {"readers": ["alice"]}})
    assert await facade.pins("closed") == (("alice",), ("alice",))
    other = Principal(sub="carol", tenant="t2", scopes=BOTH)
    await facade.create(other, "p")
    assert await facade.pins("p", "t2") == (("*",), ("carol",))


async def test_what_the_creator_asks_is_the_native_definition_with_its_rules() -> None:
    facade = Facade()
    with pytest.raises(InvalidDefinition):
        await facade.create(ALICE, "named", {"stream_id": "other"})
    with pytest.raises(InvalidDefinition):
        await facade.create(ALICE, "bad", {"credit": {"max_unread_items": -1}})
    with pytest.raises(InvalidDefinition):
        await facade.create(ALICE, "bad", {"authorization": "everyone"})
    assert await facade.catalog.find("t1", "named") is None
    assert await facade.catalog.find("t1", "bad") is None


async def test_a_definition_asked_again_must_be_the_one_the_stream_has() -> None:
    facade = Facade()
    asked = {"retention": {"max_records": 5}}
    assert await facade.create(ALICE, "p", asked)
    assert not await facade.create(ALICE, "p", asked)
    assert not await facade.create(ALICE, "p")  # no definition asked: not compared
    with pytest.raises(DefinitionConflict):
        await facade.create(ALICE, "p", {"retention": {"max_records": 6}})


async def test_an_expired_stream_a_reader_looks_at_is_gone_not_forbidden() -> None:
    facade = Facade()
    await facade.create(ALICE, "p", {"authorization": {"readers": ["alice", "bob"]}}, ttl=60)
    facade.clock.advance(61)
    with pytest.raises(NotFound):
        await facade.read(BOB, "p")
    assert await facade.catalog.find("t1", "p") is None


def test_the_creator_alone_is_the_default_whatever_the_template_leaves_out() -> None:
    definition = facade_definition(ALICE, {"*": {"retention": {"max_records": 3}}}, None)
    assert definition == {"content_class": "durable_streams.facade",
                          "retention": {"max_records": 3}, "stream_id": FACADE_STREAM,
                          "authorization": {"readers": ["alice"], "writers": ["alice"]}}


def test_the_creator_stays_among_the_writers_a_template_names() -> None:
    templates = {"t1": {"authorization": {"readers": ["ui"], "writers": ["svc"]}}}
    definition = facade_definition(ALICE, templates, None)
    assert definition["authorization"] == {"readers": ["ui"], "writers": ["svc", "alice"]}
    anyone = facade_definition(ALICE, {"*": {"authorization": {"writers": ["*"]}}}, None)
    assert anyone["authorization"] == {"readers": ["alice"], "writers": ["*"]}
