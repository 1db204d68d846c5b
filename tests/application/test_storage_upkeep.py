"""What upkeep (ADR 0032) changes for clients: a key is answered with its first sequence
within the retry window, even once retention pruned its record, and is a new key after it;
an erased run stays erased (410) once everything of it is gone."""

import pytest

from application.maintenance import UpkeepSettings
from application.node import NodeSettings
from domain.errors import RunErased
from entrypoints.testing.simulation import Simulation, simulation
from tests.application.support import ADMIN, ALICE, RUN, fake_clock, key, make_stream

WINDOW = 3600.0


def upkept() -> Simulation:
    return simulation(NodeSettings(upkeep=UpkeepSettings(receipt_min_seconds=WINDOW,
                                                         audit_events=2)))


async def keyed(sim: Simulation, name: str, payload: object) -> tuple[int, ...]:
    result = await sim.service.appender.append(
        ALICE, RUN, "s", [{"payload": payload, "idempotency_key": name}])
    return result.sequences


async def upkeep(sim: Simulation) -> None:
    assert sim.service.maintenance is not None
    await sim.service.maintenance.run_once()


async def test_a_retry_within_the_window_gets_its_first_sequence_after_a_prune() -> None:
    sim = upkept()
    await make_stream(sim, retention={"max_records": 1})
    assert await keyed(sim, "k1", 1) == (1,)
    assert await keyed(sim, "k2", 2) == (2,)
    await sim.service.retention.prune_all()  # record 1 is gone
    await upkeep(sim)
    assert len(sim.ports.store.event_log(key())) == 2  # the audit tail

    assert await keyed(sim, "k1", 1) == (1,)  # the retry stores nothing new

    fake_clock(sim).advance(WINDOW + 1)
    await upkeep(sim)
    # Past the window, the receipt of the pruned record is gone: the key is a new key.
    assert await keyed(sim, "k1", 1) == (3,)
    assert await keyed(sim, "k2", 2) == (2,)  # its record is retained: still answered


async def test_an_erased_run_answers_run_erased_once_upkeep_removed_everything() -> None:
    sim = upkept()
    await make_stream(sim)
    await keyed(sim, "k1", 1)
    await sim.service.lifecycle.erase_run(ADMIN, RUN)
    await upkeep(sim)

    assert sim.ports.store.event_log(key()) == []
    with pytest.raises(RunErased):
        await keyed(sim, "k1", 1)
    stream = await sim.ports.store.load(key())
    assert stream is not None and stream.erased
    again = await sim.service.lifecycle.erase_run(ADMIN, RUN)  # still found, nothing left
    assert again.records_deleted == 0
