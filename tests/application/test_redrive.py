"""Re-driving dead letters (ADR 0057): admins only, input streams only, audited; a re-driven
record is its stream's next delivery."""

import pytest

from application.dispatching import backoff_seconds
from application.node import NodeSettings
from domain.errors import Forbidden, NotAnInputStream, NotFound, RunErased
from domain.principal import Principal
from entrypoints.testing.simulation import Simulation, simulation
from tests.application.support import (
    ADMIN,
    ALICE,
    RUN,
    append_numbers,
    fake_clock,
    key,
    make_stream,
)


async def with_dead_letters(dead: int = 1, behind: int = 1, attempts: int = 1) -> Simulation:
    """An input stream whose first `dead` records dead-lettered, and `behind` delivered."""
    sim = simulation(node=NodeSettings(delivery_max_attempts=attempts))
    await make_stream(sim, direction="input")
    await append_numbers(sim, 1, dead + behind)
    sim.workflow.fail_next(dead * attempts)
    for _ in range(attempts):
        await sim.service.dispatcher.dispatch_once("w")
        fake_clock(sim).advance(3600)
    return sim


def delivered(sim: Simulation) -> list[int]:
    return [event.sequence for event in sim.workflow.events]


async def test_a_dead_letter_no_longer_holds_back_its_stream_and_a_redrive_delivers_it_next(
        ) -> None:
    sim = await with_dead_letters(dead=1, behind=1)
    assert delivered(sim) == [2]  # the line moved on without 1
    await append_numbers(sim, 3, 3)  # pending behind the dead letter
    report = await sim.service.redrive.redrive(ADMIN, RUN, "s", None)
    assert (report.redriven, report.not_dead, report.not_retained,
            report.dead_letter_count) == ((1,), (), (), 0)
    assert await sim.service.dispatcher.dispatch_once("w") == 2
    assert delivered(sim) == [2, 1, 3]  # 1 before what was still pending behind it


async def test_a_redriven_record_that_fails_again_holds_back_the_records_behind_it() -> None:
    sim = await with_dead_letters(dead=1, behind=0, attempts=2)
    assert [d.sequence for d in await sim.ports.outbox.dead_letters(key())] == [1]
    await append_numbers(sim, 2, 2)
    await sim.service.redrive.redrive(ADMIN, RUN, "s", [1])
    sim.workflow.fail_next(1)
    assert await sim.service.dispatcher.dispatch_once("w") == 0  # 1 backs off, 2 waits
    fake_clock(sim).advance(backoff_seconds(1))
    assert await sim.service.dispatcher.dispatch_once("w") == 2
    assert delivered(sim) == [1, 2]


async def test_each_redrive_is_shown_in_the_deliveries_view_newest_first() -> None:
    sim = await with_dead_letters(dead=2, behind=0)
    sim.workflow.fail_next(100)
    clock = fake_clock(sim)
    then = clock.now()
    first = await sim.service.redrive.redrive(ADMIN, RUN, "s", [2])
    clock.advance(60)
    ops = Principal("ops", ADMIN.tenant, ADMIN.scopes)
    second = await sim.service.redrive.redrive(ops, RUN, "s", [1, 2])
    assert (first.redriven, second.redriven, second.not_dead) == ((2,), (1,), (2,))
    view = await sim.service.delivery_inspection.report(ADMIN, RUN, "s")
    assert [(r.by, r.at, r.sequences) for r in view.redrives] == [
        ("ops", clock.now(), (1,)), (ADMIN.sub, then, (2,))]
    assert (view.pending, view.dead_letter_count) == (2, 0)


async def test_a_redrive_of_records_that_are_not_dead_changes_and_records_nothing() -> None:
    sim = await with_dead_letters(dead=1, behind=1)
    await append_numbers(sim, 3, 3)
    report = await sim.service.redrive.redrive(ADMIN, RUN, "s", [2, 3, 40])
    assert (report.redriven, report.not_dead, report.dead_letter_count) == ((), (2, 3, 40), 1)
    view = await sim.service.delivery_inspection.report(ADMIN, RUN, "s")
    assert (list(view.redrives), view.pending, view.dead_letter_count) == ([], 1, 1)


async def test_a_dead_letter_whose_record_was_pruned_is_reported_and_left_dead() -> None:
    sim = simulation(node=NodeSettings(delivery_max_attempts=1))
    await make_stream(sim, direction="input", retention={"max_records": 1})
    await append_numbers(sim, 1, 2)
    sim.workflow.fail_next(2)
    await sim.service.dispatcher.dispatch_once("w")
    await sim.service.retention.prune(key())  # 1 goes, 2 stays
    report = await sim.service.redrive.redrive(ADMIN, RUN, "s", None)
    assert (report.redriven, report.not_retained, report.dead_letter_count) == ((2,), (1,), 1)
    assert await sim.service.dispatcher.dispatch_once("w") == 1
    assert delivered(sim) == [2]


@pytest.mark.parametrize("principal", [ALICE, Principal("r", ADMIN.tenant,
                                                        frozenset({"streams:read"}))])
async def test_only_an_admin_redrives(principal: Principal) -> None:
    sim = await with_dead_letters()
    with pytest.raises(Forbidden):
        await sim.service.redrive.redrive(principal, RUN, "s", None)
    assert [d.sequence for d in await sim.ports.outbox.dead_letters(key())] == [1]


async def test_another_tenants_stream_is_not_found_and_an_output_stream_has_nothing() -> None:
    sim = await with_dead_letters()
    stranger = Principal("root", "other-tenant", ADMIN.scopes)
    with pytest.raises(NotFound):
        await sim.service.redrive.redrive(stranger, RUN, "s", None)
    bound = Principal("root", ADMIN.tenant, ADMIN.scopes, runs=frozenset({"another-run"}))
    with pytest.raises(NotFound):
        await sim.service.redrive.redrive(bound, RUN, "s", None)
    await make_stream(sim, "out")
    with pytest.raises(NotAnInputStream):
        await sim.service.redrive.redrive(ADMIN, RUN, "out", None)
    assert [d.sequence for d in await sim.ports.outbox.dead_letters(key())] == [1]


async def test_an_erased_run_is_not_redriven() -> None:
    sim = await with_dead_letters()
    await sim.service.lifecycle.erase_run(ADMIN, RUN)
    with pytest.raises(RunErased):
        await sim.service.redrive.redrive(ADMIN, RUN, "s", None)
    assert sim.workflow.events[-1].sequence == 2
