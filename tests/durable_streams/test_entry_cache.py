"""Plain facade appends keep the catalog entry they found (`EntryCache`, ADR 0071), and a
delete, a re-create, a soft delete or a slid TTL on another node is still seen: in process
with two facades over one store and catalog (two nodes of one database), and over two real
`runnel serve` processes on one Postgres database."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from adapters.memory.clock import FakeClock
from adapters.memory.durable_streams import MemoryFacadeCatalog
from application.durable_streams.facade import DurableStreams
from application.durable_streams.forks import FACADE_STREAM
from application.durable_streams.stream_config import StreamConfig
from application.ports.durable_streams import FacadeEntry, StreamGone
from domain.errors import DomainError, Forbidden, NotFound
from domain.principal import Principal, Scope
from entrypoints.testing.simulation import simulation
from tests.durable_streams.support import client
from tests.http.server import RunnelServer
from tests.pg import create_database, drop_database, pg_template, run_sync  # noqa: F401

BOTH = frozenset({Scope.READ.value, Scope.WRITE.value})
ALICE = Principal(sub="alice", tenant="t1", scopes=BOTH)
BOB = Principal(sub="bob", tenant="t1", scopes=BOTH)
TEXT = "text/plain"


class Nodes:
    """Two facades (two nodes) over one service and one catalog (one database)."""

    def __init__(self) -> None:
        self.clock = FakeClock()
        self.service = simulation(clock=self.clock).service
        catalog = MemoryFacadeCatalog()
        self.a = DurableStreams(self.service, catalog, self.clock)
        self.b = DurableStreams(self.service, catalog, self.clock)

    async def plain_append(self, node: DurableStreams, principal: Principal, path: str,
                           text: str) -> FacadeEntry:
        """As the handler's plain append: the kept entry first, the full path on refusal."""
        entry = await node.find_writable(principal, path)
        try:
            await node.append_records(principal, entry, [{"payload": text}])
        except DomainError:  # nothing was stored
            entry, _ = await node.find_for_writing(principal, path)
            await node.append(principal, entry, [{"payload": text}], False, None)
        return entry

    async def texts(self, path: str) -> list[object]:
        entry = await self.b.find(ALICE, path)
        return [record.payload for record in (await self.b.read(ALICE, entry, 0, 100)).records]


async def test_a_delete_and_a_re_create_on_another_node_are_seen() -> None:
    nodes = Nodes()
    old, _ = await nodes.a.create(ALICE, "p", StreamConfig(TEXT, None, None))
    await nodes.plain_append(nodes.a, ALICE, "p", "one")  # node a keeps the entry
    await nodes.b.delete(ALICE, "p")
    with pytest.raises(NotFound):
        await nodes.plain_append(nodes.a, ALICE, "p", "into the deleted stream")
    new, _ = await nodes.b.create(ALICE, "p", StreamConfig(TEXT, None, None))
    assert new.run_id != old.run_id
    await nodes.plain_append(nodes.a, ALICE, "p", "two")
    assert await nodes.texts("p") == ["two"]
    erased = await nodes.service.definitions.get(ALICE, old.run_id, FACADE_STREAM)
    assert erased.erased and erased.head == 1  # nothing more reached the old run


async def test_the_new_streams_pins_decide_not_the_kept_ones() -> None:
    nodes = Nodes()
    await nodes.a.create(ALICE, "p", StreamConfig(TEXT, None, None))
    await nodes.plain_append(nodes.a, ALICE, "p", "alice's")
    await nodes.b.delete(ALICE, "p")
    await nodes.b.create(BOB, "p", StreamConfig(TEXT, None, None))  # bob's alone now
    with pytest.raises(Forbidden):
        await nodes.plain_append(nodes.a, ALICE, "p", "not bob's")
    await nodes.plain_append(nodes.a, BOB, "p", "bob's")


async def test_a_soft_delete_on_another_node_is_gone_here() -> None:
    nodes = Nodes()
    await nodes.a.create(ALICE, "src", StreamConfig(TEXT, None, None))
    await nodes.plain_append(nodes.a, ALICE, "src", "one")
    await nodes.b.create(ALICE, "fork", StreamConfig(TEXT, None, None, forked_from="src"))
    await nodes.b.delete(ALICE, "src")  # the fork keeps its entry, deleted
    with pytest.raises(StreamGone):
        await nodes.plain_append(nodes.a, ALICE, "src", "two")


async def test_a_ttl_slid_on_another_node_keeps_the_stream_here() -> None:
    nodes = Nodes()
    await nodes.a.create(ALICE, "p", StreamConfig(TEXT, 10, None))
    await nodes.plain_append(nodes.a, ALICE, "p", "one")  # kept with touched_at = t0
    nodes.clock.advance(6)
    await nodes.b.touch(ALICE, await nodes.b.find(ALICE, "p"))  # a read on b: t0 + 6
    nodes.clock.advance(6)  # the kept entry says expired; the catalog's says not
    await nodes.plain_append(nodes.a, ALICE, "p", "two")
    assert await nodes.texts("p") == ["one", "two"]
    nodes.clock.advance(11)
    with pytest.raises(NotFound):
        await nodes.plain_append(nodes.a, ALICE, "p", "too late")


@pytest.fixture(scope="module")
def two_servers(pg_template: str, tmp_path_factory: pytest.TempPathFactory,  # noqa: F811
                ) -> Iterator[tuple[RunnelServer, RunnelServer]]:
    dsn = run_sync(lambda: create_database(template=pg_template, prefix="runnel_ds_two"))
    servers: list[RunnelServer] = []
    try:
        for name in ("a", "b"):
            servers.append(RunnelServer.start({"RUNNEL_DATABASE_URL": dsn},
                                              Path(tmp_path_factory.mktemp(f"node-{name}"))))
        yield servers[0], servers[1]
    finally:
        for server in servers:
            server.stop()
        run_sync(lambda: drop_database(dsn))


def test_two_servers_see_each_others_deletes_and_re_creates(
        two_servers: tuple[RunnelServer, RunnelServer]) -> None:
    a_server, b_server = two_servers
    path = f"two-{uuid.uuid4().hex[:8]}"
    text = {"content-type": TEXT}
    with client(a_server.url) as a, client(b_server.url) as b, \
            client(b_server.url, sub="bob") as bob:
        old_run = a.put(path, headers=text).headers["runnel-run-id"]
        assert a.post(path, content="one", headers=text).status_code == 204
        assert a.post(path, content="two", headers=text).status_code == 204  # kept entry
        assert b.delete(path).status_code == 204
        assert a.post(path, content="lost", headers=text).status_code == 404
        assert b.put(path, headers=text).status_code == 201
        assert a.post(path, content="three", headers=text).status_code == 204
        assert b.get(path, params={"offset": "-1"}).text == "three"
        assert b.delete(path).status_code == 204
        assert bob.put(path, headers=text).status_code == 201  # bob's pins now
        refused = a.post(path, content="alice's", headers=text)
        assert refused.status_code == 403, refused.text
        assert bob.get(path, params={"offset": "-1"}).text == ""
        old = httpx.get(f"{a_server.api}/runs/{old_run}/streams/{FACADE_STREAM}",
                        headers=a.headers).json()["status"]
        assert old["erased"] and old["head"] == 2  # nothing more reached the old run
