"""Reading definitions: pins decide who sees a stream; another tenant or run sees nothing."""

import pytest

from application.definitions import StreamDefinitions
from application.node import NodeSettings
from domain.errors import Forbidden, InvalidIdentifier, InvalidLimit, NotFound, WrongRegion
from domain.principal import Principal
from entrypoints.testing.simulation import Simulation, simulation
from tests.application.support import ADMIN, ALICE, BOB, READ_WRITE, RUN, definition, make_stream


async def two_streams() -> Simulation:
    sim = simulation()
    await sim.service.definitions.create(ALICE, RUN, definition("open"))
    await sim.service.definitions.create(
        ALICE, RUN, definition("private", authorization={"readers": ["bob"], "writers": ["*"]}))
    return sim


async def test_get_returns_the_definition_and_status() -> None:
    sim = await two_streams()
    await sim.service.appender.append(ALICE, RUN, "open", [{"payload": 1}])
    stream = await sim.service.definitions.get(ALICE, RUN, "open")
    assert (stream.stream_id, stream.head, stream.closed) == ("open", 1, False)


async def test_list_shows_only_the_streams_whose_reader_pins_admit_the_principal() -> None:
    sim = await two_streams()
    listed = await sim.service.definitions.list(ALICE, RUN)
    assert [stream.stream_id for stream in listed.streams] == ["open"]
    for principal in (BOB, ADMIN):
        listed = await sim.service.definitions.list(principal, RUN)
        assert sorted(stream.stream_id for stream in listed.streams) == ["open", "private"]


async def test_get_of_a_stream_whose_readers_exclude_the_principal_is_forbidden() -> None:
    sim = await two_streams()
    with pytest.raises(Forbidden):
        await sim.service.definitions.get(ALICE, RUN, "private")
    assert (await sim.service.definitions.get(BOB, RUN, "private")).stream_id == "private"


async def test_another_tenants_run_is_not_found() -> None:
    sim = await two_streams()
    stranger = Principal("alice", "t2", READ_WRITE)
    with pytest.raises(NotFound):
        await sim.service.definitions.get(stranger, RUN, "open")
    with pytest.raises(NotFound):
        await sim.service.definitions.list(stranger, RUN)


async def test_a_token_bound_to_other_runs_sees_no_such_run() -> None:
    sim = await two_streams()
    bound = Principal("alice", "t1", READ_WRITE, runs=frozenset({"run-2"}))
    with pytest.raises(NotFound):
        await sim.service.definitions.get(bound, RUN, "open")
    with pytest.raises(NotFound):
        await sim.service.definitions.list(bound, RUN)
    bound_here = Principal("alice", "t1", READ_WRITE, runs=frozenset({RUN}))
    assert (await sim.service.definitions.get(bound_here, RUN, "open")).stream_id == "open"


async def test_an_unknown_stream_is_not_found() -> None:
    sim = await two_streams()
    with pytest.raises(NotFound):
        await sim.service.definitions.get(ALICE, RUN, "missing")


async def test_reading_definitions_needs_the_read_scope() -> None:
    sim = await two_streams()
    writer_only = Principal("alice", "t1", frozenset({"streams:write"}))
    with pytest.raises(Forbidden):
        await sim.service.definitions.get(writer_only, RUN, "open")
    with pytest.raises(Forbidden):
        await sim.service.definitions.list(writer_only, RUN)


# -- pages (ADR 0025) ---------------------------------------------------------------


async def listed_pages(sim: Simulation, principal: Principal, limit: int) -> list[list[str]]:
    pages, cursor = [], None
    while True:
        page = await sim.service.definitions.list(principal, RUN, cursor, limit)
        pages.append([stream.stream_id for stream in page.streams])
        if page.next_cursor is None:
            return pages
        cursor = page.next_cursor


async def test_pages_end_exactly_at_the_runs_last_stream() -> None:
    sim = simulation()
    for name in ("d", "b", "a", "c"):
        await make_stream(sim, name)
    assert await listed_pages(sim, ALICE, 2) == [["a", "b"], ["c", "d"]]  # no empty third
    assert await listed_pages(sim, ALICE, 3) == [["a", "b", "c"], ["d"]]
    assert await listed_pages(sim, ALICE, 100) == [["a", "b", "c", "d"]]


async def test_a_page_leaves_out_what_the_principal_may_not_read_and_goes_on() -> None:
    sim = simulation()
    for name in ("a", "c"):
        await make_stream(sim, name)
    await make_stream(sim, "b", authorization={"readers": ["bob"], "writers": ["*"]})
    assert await listed_pages(sim, ALICE, 1) == [["a"], [], ["c"]]
    assert await listed_pages(sim, BOB, 1) == [["a"], ["b"], ["c"]]


async def test_the_page_size_is_bounded_and_a_cursor_is_an_id() -> None:
    sim = await two_streams()
    for limit in (0, 1001):
        with pytest.raises(InvalidLimit):
            await sim.service.definitions.list(ALICE, RUN, None, limit)
    with pytest.raises(InvalidIdentifier):
        await sim.service.definitions.list(ALICE, RUN, "a/b")
    with pytest.raises(NotFound):  # a cursor does not make an unknown run exist
        await sim.service.definitions.list(ALICE, "run-unknown", "open")
    after_all = await sim.service.definitions.list(ALICE, RUN, "zzz")
    assert (list(after_all.streams), after_all.next_cursor) == ([], None)


async def test_a_run_homed_elsewhere_is_421_when_its_first_page_holds_it_all() -> None:
    sim = simulation()
    away = {"metadata_home": "local", "metadata_replicas": ["eu"]}
    await make_stream(sim, "a", placement=away)
    await make_stream(sim, "b")
    # Seen from a node in "us": no stream may be described there.
    us = StreamDefinitions(sim.ports.store, sim.ports.clock, NodeSettings(region="us"))
    with pytest.raises(WrongRegion):
        await us.list(ALICE, RUN)
    page = await us.list(ALICE, RUN, None, 1)  # not the whole run: a page, empty
    assert (list(page.streams), page.next_cursor) == ([], "a")
    eu = StreamDefinitions(sim.ports.store, sim.ports.clock, NodeSettings(region="eu"))
    assert [s.stream_id for s in (await eu.list(ALICE, RUN)).streams] == ["a"]
