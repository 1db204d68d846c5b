"""Input delivery: at-least-once with a stable event id, backoff on failure, dead letter after N."""

from application.dispatching import backoff_seconds
from application.node import NodeSettings
from application.views import DeliveryCounts, stream_view
from domain.identifiers import input_event_id
from entrypoints.testing.simulation import Simulation, simulation
from tests.application.support import ALICE, RUN, append_numbers, fake_clock, key, make_stream


async def input_stream(node: NodeSettings | None = None, records: int = 2) -> Simulation:
    sim = simulation(node=node)
    await make_stream(sim, direction="input")
    await append_numbers(sim, 1, records)
    return sim


async def test_each_input_record_is_published_once_with_a_deterministic_id() -> None:
    sim = await input_stream()
    assert await sim.service.dispatcher.dispatch_once("w1") == 2
    assert [(e.event_id, e.run_id, e.stream_id, e.sequence) for e in sim.workflow.events] == [
        (input_event_id(key(), 1), RUN, "s", 1), (input_event_id(key(), 2), RUN, "s", 2)]
    assert sim.workflow.events[0].record["payload"] == 1
    assert await sim.service.dispatcher.dispatch_once("w1") == 0
    assert sim.ports.outbox.pending() == 0
    other = await input_stream()
    await other.service.dispatcher.dispatch_once("elsewhere")
    assert [e.event_id for e in other.workflow.events] == [e.event_id for e in sim.workflow.events]


async def test_a_failed_publish_is_retried_with_growing_backoff() -> None:
    sim = await input_stream(records=1)
    clock = fake_clock(sim)
    sim.workflow.fail_next(2)
    assert await sim.service.dispatcher.dispatch_once("w") == 0
    assert await sim.service.dispatcher.dispatch_once("w") == 0  # not due: not even tried
    clock.advance(backoff_seconds(1))
    assert await sim.service.dispatcher.dispatch_once("w") == 0  # second failure
    clock.advance(backoff_seconds(1))
    assert backoff_seconds(2) > backoff_seconds(1)
    assert await sim.service.dispatcher.dispatch_once("w") == 0  # backoff grew: not due yet
    clock.advance(backoff_seconds(2) - backoff_seconds(1))
    assert await sim.service.dispatcher.dispatch_once("w") == 1
    assert [e.sequence for e in sim.workflow.events] == [1]
    assert await sim.ports.outbox.dead_letters(key()) == []


async def test_a_row_failing_every_attempt_is_dead_lettered_and_stays_visible() -> None:
    sim = await input_stream(NodeSettings(delivery_max_attempts=3), records=1)
    clock = fake_clock(sim)
    sim.workflow.fail_next(100)
    for _ in range(3):
        assert await sim.service.dispatcher.dispatch_once("w") == 0
        clock.advance(3600)
    [dead] = await sim.ports.outbox.dead_letters(key())
    assert (dead.sequence, dead.attempts, dead.dead) == (1, 3, True)
    assert dead.last_error is not None and "ConnectionError" in dead.last_error
    sim.workflow.fail_next(0)
    assert await sim.service.dispatcher.dispatch_once("w") == 0
    assert sim.workflow.events == []


async def test_a_claimed_row_is_not_claimed_again_before_its_lease_expires() -> None:
    lease = 30.0
    sim = await input_stream(NodeSettings(delivery_lease_seconds=lease))
    clock = fake_clock(sim)
    crashed = await sim.ports.outbox.claim("crashed-worker", clock.now(), lease, 100, "local")
    assert [d.sequence for d in crashed] == [1, 2]
    clock.advance(lease - 1)
    assert await sim.service.dispatcher.dispatch_once("w2") == 0
    assert sim.workflow.events == []
    clock.advance(1)
    assert await sim.service.dispatcher.dispatch_once("w2") == 2
    assert [e.event_id for e in sim.workflow.events] == [
        input_event_id(key(), 1), input_event_id(key(), 2)]


async def test_a_record_pruned_before_delivery_is_dead_lettered() -> None:
    sim = simulation()
    await make_stream(sim, direction="input", retention={"max_records": 1})
    await append_numbers(sim, 1, 2)
    await sim.service.retention.prune(key())
    assert await sim.service.dispatcher.dispatch_once("w") == 1
    [dead] = await sim.ports.outbox.dead_letters(key())
    assert dead.sequence == 1


async def test_the_stream_status_counts_pending_inputs_and_dead_letters() -> None:
    sim = await input_stream(NodeSettings(delivery_max_attempts=1), records=2)
    stream = await sim.service.definitions.get(ALICE, RUN, "s")
    status = stream_view(stream, await sim.service.dispatcher.counts(stream))["status"]
    assert (status["pending_inputs"], status["dead_letters"]) == (2, 0)
    sim.workflow.fail_next(1)
    assert await sim.service.dispatcher.dispatch_once("w") == 1
    assert await sim.service.dispatcher.counts(stream) == DeliveryCounts(0, 1)
    status = stream_view(stream, DeliveryCounts(0, 1))["status"]
    assert (status["pending_inputs"], status["dead_letters"]) == (0, 1)
    await make_stream(sim, "out")
    output = await sim.service.definitions.get(ALICE, RUN, "out")
    assert await sim.service.dispatcher.counts(output) == DeliveryCounts(0, 0)


async def test_without_a_wait_service_input_records_stay_pending_and_unclaimed() -> None:
    sim = simulation(delivering=False)
    await make_stream(sim, direction="input")
    await append_numbers(sim, 1, 3)
    for _ in range(3):
        assert await sim.service.dispatcher.dispatch_once("w") == 0
        fake_clock(sim).advance(3600)
    stream = await sim.service.definitions.get(ALICE, RUN, "s")
    assert await sim.service.dispatcher.counts(stream) == DeliveryCounts(pending=3)
    assert await sim.service.dispatcher.pending_total() == 3
    assert sim.workflow.events == []
    # Never claimed: no attempt, lease or error was spent on them.
    claimed = await sim.ports.outbox.claim("later", sim.ports.clock.now(), 30.0, 100, "local")
    assert [(d.sequence, d.attempts, d.last_error) for d in claimed] == [
        (1, 0, None), (2, 0, None), (3, 0, None)]


async def test_a_failed_record_holds_back_the_records_behind_it_in_its_stream_only() -> None:
    sim = await input_stream(records=3)
    await make_stream(sim, "t", direction="input")
    await append_numbers(sim, 1, 2, stream_id="t")
    clock = fake_clock(sim)
    sim.workflow.fail_next(1)  # "s" is delivered first: its sequence 1 fails once
    assert await sim.service.dispatcher.dispatch_once("w") == 2
    assert [(e.stream_id, e.sequence) for e in sim.workflow.events] == [("t", 1), ("t", 2)]
    assert await sim.service.dispatcher.dispatch_once("w") == 0  # 1 is backing off: 2 waits
    clock.advance(backoff_seconds(1))
    assert await sim.service.dispatcher.dispatch_once("w") == 3
    assert [e.sequence for e in sim.workflow.events if e.stream_id == "s"] == [1, 2, 3]


async def test_a_stream_whose_head_is_leased_by_another_worker_is_not_claimed_behind_it() -> None:
    sim = await input_stream(records=3)
    clock = fake_clock(sim)
    [head] = await sim.ports.outbox.claim("other-worker", clock.now(), 30.0, 1, "local")
    assert head.sequence == 1
    assert await sim.ports.outbox.claim("w", clock.now(), 30.0, 100, "local") == []
    assert await sim.service.dispatcher.dispatch_once("w") == 0
    assert sim.workflow.events == []
