"""Creating a stream: defaults are filled, identical re-creates are idempotent, nothing else is."""

import pytest

from application.node import NodeSettings
from domain.errors import (
    DefinitionConflict,
    Forbidden,
    ForbiddenContentClass,
    RunErased,
    WrongRegion,
)
from domain.identifiers import RunKey
from domain.principal import Principal
from entrypoints.testing.simulation import simulation
from tests.application.support import ADMIN, ALICE, RUN, TENANT, definition


async def test_a_minimal_definition_gets_every_default_filled() -> None:
    service = simulation(node=NodeSettings(region="eu-1")).service
    stream, created = await service.definitions.create(ALICE, RUN, definition())
    assert created
    assert stream.definition.to_wire() == {
        "stream_id": "s", "direction": "output", "mode": "durable",
        "content_class": "output.text",
        "credit": {"max_unread_items": 1000, "max_unread_bytes": 8388608,
                   "max_total_items": 100000, "max_total_bytes": 1073741824,
                   "max_open_objects": 100,
                   "on_unread_full": "reject", "block_timeout_seconds": 5.0},
        "retention": {"max_age_seconds": None, "max_records": None},
        "expires_after_seconds": None,
        "redaction": {"mask": [], "allow_unmasked_bodies": False},
        "placement": {"metadata_home": "eu-1", "metadata_replicas": [],
                      "object_regions": ["eu-1"], "client_egress_regions": ["eu-1"],
                      "log_region": "eu-1"},
        "authorization": {"readers": ["*"], "writers": ["*"]},
        "consumers": [],
    }
    assert (stream.head, stream.earliest, stream.closed) == (0, 1, False)


async def test_an_identical_re_create_returns_the_stored_stream_without_creating() -> None:
    sim = simulation()
    first, _ = await sim.service.definitions.create(ALICE, RUN, definition())
    await sim.service.appender.append(ALICE, RUN, "s", [{"payload": 1}])
    spelled_out = definition(credit={"max_unread_items": 1000}, consumers=[])
    again, created = await sim.service.definitions.create(ALICE, RUN, spelled_out)
    assert not created
    assert again.definition == first.definition
    assert again.head == 1  # the stored stream, not a fresh one
    assert len(sim.ports.store.event_log(first.key)) == 2  # Created, Appended: no second Created


async def test_the_same_stream_id_with_another_definition_is_a_conflict() -> None:
    service = simulation().service
    await service.definitions.create(ALICE, RUN, definition())
    with pytest.raises(DefinitionConflict):
        await service.definitions.create(ALICE, RUN, definition(consumers=["ui"]))


async def test_the_same_stream_id_in_another_run_is_another_stream() -> None:
    service = simulation().service
    await service.definitions.create(ALICE, RUN, definition())
    _, created = await service.definitions.create(ALICE, "run-2", definition(consumers=["ui"]))
    assert created


async def test_creating_in_an_erased_run_is_refused() -> None:
    service = simulation().service
    await service.definitions.create(ALICE, RUN, definition("a"))
    await service.lifecycle.erase_run(ADMIN, RUN)
    with pytest.raises(RunErased):
        await service.definitions.create(ALICE, RUN, definition("b"))


async def test_creating_away_from_the_metadata_home_is_refused() -> None:
    sim = simulation(node=NodeSettings(region="local"))
    with pytest.raises(WrongRegion):
        await sim.service.definitions.create(
            ALICE, RUN, definition(placement={"metadata_home": "eu-1"}))
    assert await sim.ports.store.list_run(RunKey(TENANT, RUN)) == []


async def test_raw_hidden_reasoning_may_not_be_streamed() -> None:
    service = simulation().service
    with pytest.raises(ForbiddenContentClass):
        await service.definitions.create(
            ALICE, RUN, {"stream_id": "s", "content_class": "model.reasoning.raw"})


async def test_creating_needs_the_write_scope() -> None:
    reader = Principal("carol", "t1", frozenset({"streams:read"}))
    with pytest.raises(Forbidden):
        await simulation().service.definitions.create(reader, RUN, definition())
