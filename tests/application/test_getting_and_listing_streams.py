"""Reading definitions: pins decide who sees a stream; another tenant or run sees nothing."""

import pytest

from adapters.memory.simulation import Simulation, simulation
from domain.errors import Forbidden, NotFound
from domain.principal import Principal
from tests.application.support import ADMIN, ALICE, BOB, READ_WRITE, RUN, definition


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
