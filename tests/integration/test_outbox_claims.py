"""Concurrent dispatch workers on two connections pools (two nodes) claim each
input-delivery row once (SKIP LOCKED), and each stream's only from its head: order holds
however the claims race."""

from __future__ import annotations

import asyncio
import random
from collections import defaultdict
from datetime import UTC, datetime

import pytest
from dependency_injector import providers

from adapters.memory.clock import FakeClock
from adapters.postgres import PostgresAdapters, open_postgres
from application.dispatching import MAX_BACKOFF_SECONDS
from application.node import NodeSettings
from application.ports.outboxes import InputEvent
from entrypoints.testing.simulation import simulation
from tests.integration.support import RUN, WRITER, definition, service_on
from tests.pg import pg_dsn, pg_template  # noqa: F401  (fixtures)

pytestmark = pytest.mark.postgres

NOW = datetime(2026, 1, 1, tzinfo=UTC)
STREAMS = ("a", "b", "c")


async def input_streams(adapters: PostgresAdapters, batches: int, size: int) -> None:
    service = service_on(adapters)
    for stream in STREAMS:
        await service.definitions.create(WRITER, RUN, definition(stream, direction="input"))
        for _ in range(batches):
            await service.appender.append(WRITER, RUN, stream,
                                          [{"payload": n} for n in range(size)])


async def test_workers_claiming_at_once_take_each_stream_only_from_its_head(
        pg_dsn: str) -> None:  # noqa: F811
    processes = [await open_postgres(pg_dsn, migrate=False, listen=False) for _ in range(2)]
    try:
        await input_streams(processes[0], 4, 5)
        claims = await asyncio.gather(*(
            processes[n % 2].outbox.claim(f"worker-{n}", NOW, 30.0, 7, "local") for n in range(12)))
    finally:
        for adapters in processes:
            await adapters.close()
    claimed = [(d.stream.stream_id, d.sequence) for claim in claims for d in claim]
    assert len(claimed) == len(set(claimed))  # no row twice
    assert all(len(claim) <= 7 for claim in claims)
    by_stream: dict[str, list[tuple[int, str | None]]] = defaultdict(list)
    for claim in claims:
        for d in claim:
            by_stream[d.stream.stream_id].append((d.sequence, d.claimed_by))
    assert set(by_stream) == set(STREAMS)  # every line went to some worker
    for rows in by_stream.values():
        assert len({owner for _, owner in rows}) == 1  # one worker per line
        assert sorted(sequence for sequence, _ in rows) == list(range(1, len(rows) + 1))


class FlakyWaitService:
    """Fails about a third of its publishes; notes every publish that starts before the
    record before it in its stream was ever published."""

    def __init__(self, seed: int) -> None:
        self._random = random.Random(seed)
        self.published: dict[str, list[int]] = defaultdict(list)
        self.out_of_order: list[tuple[str, int]] = []

    async def publish(self, event: InputEvent) -> None:
        seen = self.published[event.stream_id]
        if event.sequence > 1 and event.sequence - 1 not in seen:
            self.out_of_order.append((event.stream_id, event.sequence))
        await asyncio.sleep(0)  # the other node's dispatcher runs meanwhile
        if self._random.random() < 0.35:
            raise ConnectionError("flaky")
        seen.append(event.sequence)


async def test_two_nodes_dispatching_through_failures_deliver_every_stream_in_order(
        pg_dsn: str) -> None:  # noqa: F811
    processes = [await open_postgres(pg_dsn, migrate=False, listen=False) for _ in range(2)]
    workflow = FlakyWaitService(seed=57)
    clock = FakeClock(NOW)
    node = NodeSettings(delivery_max_attempts=1000)
    simulations = [simulation(node, clock, backend=adapters) for adapters in processes]
    for sim in simulations:  # both nodes publish to the one flaky workflow
        sim.container.wait_service.override(providers.Object(workflow))
    services = [sim.service for sim in simulations]
    try:
        await input_streams(processes[0], 3, 10)
        for _ in range(2000):
            if not await services[0].dispatcher.pending_total():
                break
            await asyncio.gather(*(service.dispatcher.dispatch_once(f"node-{n}", 4)
                                   for n, service in enumerate(services)))
            clock.advance(MAX_BACKOFF_SECONDS)
        assert await services[0].dispatcher.pending_total() == 0
    finally:
        for adapters in processes:
            await adapters.close()
    assert workflow.out_of_order == []
    for stream in STREAMS:
        assert sorted(set(workflow.published[stream])) == list(range(1, 31))


async def test_a_redrive_in_a_run_marked_erased_redrives_and_records_nothing(
        pg_dsn: str) -> None:  # noqa: F811
    adapters = await open_postgres(pg_dsn, migrate=False, listen=False)
    try:
        await input_streams(adapters, 1, 2)
        [key, *_] = [d.stream for d in await adapters.outbox.claim("w", NOW, 30.0, 1, "local")]
        await adapters.outbox.dead_letter(key, 1, "gave up")
        await adapters.store.mark_run_erased(key.run)  # the eraser has not reached it yet
        assert await adapters.outbox.redrive(key, [1], "root", NOW) == []
        assert await adapters.outbox.redrives(key, 10) == []
        assert [d.sequence for d in await adapters.outbox.dead_letters(key)] == [1]
    finally:
        await adapters.close()


async def test_a_redrive_racing_claims_on_two_nodes_hands_each_row_out_once(
        pg_dsn: str) -> None:  # noqa: F811
    processes = [await open_postgres(pg_dsn, migrate=False, listen=False) for _ in range(2)]
    try:
        await input_streams(processes[0], 1, 3)
        first = await processes[0].outbox.claim("w", NOW, 30.0, 100, "local")
        for stream in {d.stream for d in first}:
            await processes[0].outbox.dead_letter(stream, 1, "gave up")
            await processes[0].outbox.release(stream, [2, 3], "w")
        keys = sorted({d.stream for d in first})
        redrives, *claims = await asyncio.gather(
            asyncio.gather(*(processes[1].outbox.redrive(key, [1], "root", NOW) for key in keys)),
            *(processes[n % 2].outbox.claim(f"racer-{n}", NOW, 30.0, 100, "local")
              for n in range(6)))
        late = await processes[0].outbox.claim("late", NOW, 30.0, 100, "local")
    finally:
        for adapters in processes:
            await adapters.close()
    assert list(redrives) == [[1]] * len(keys)
    claimed = [(d.stream, d.sequence) for claim in [*claims, late] for d in claim]
    assert len(claimed) == len(set(claimed))  # no row handed out twice
    for key in keys:  # and none left behind: the re-driven 1 is claimable at once
        assert sorted(sequence for stream, sequence in claimed if stream == key) == [1, 2, 3]
