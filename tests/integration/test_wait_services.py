"""The workflow wait-service adapters: the signed webhook against a local receiver that
verifies with the SDK, NOTIFY on Postgres, and the tenant on every event (ADR 0022)."""

from __future__ import annotations

import asyncio
import json
from datetime import UTC, datetime, timedelta
from typing import Any

import asyncpg
import pytest

from adapters.clock import SystemClock
from adapters.memory.clock import FakeClock
from adapters.postgres import open_postgres
from adapters.postgres.wait_notify import PostgresNotifyWaitService
from adapters.webhook import WebhookRejected, WebhookWaitService
from application.dispatching import InputDispatcher, backoff_seconds
from application.node import NodeSettings
from application.ports.outboxes import InputEvent
from domain.identifiers import StreamKey, input_event_id
from domain.principal import Principal
from entrypoints.testing.simulation import Simulation, simulation
from tests.application.support import (
    ALICE,
    READ_WRITE,
    RUN,
    TENANT,
    append_numbers,
    definition,
    fake_clock,
    key,
    make_stream,
)
from tests.integration.support import service_on
from tests.integration.webhook_receiver import (  # noqa: F401  (fixture)
    Receiver,
    new_webhook_secret,
    receiver,
)
from tests.pg import pg_dsn, pg_template  # noqa: F401  (fixtures)

DEADLINE = 30.0  # an upper bound for a notification to arrive; never asserted as a duration
OTHER_TENANT = "t2"
NAMESAKE = Principal(ALICE.sub, OTHER_TENANT, READ_WRITE)
"""Alice's namesake in another tenant, using the same run and stream ids."""


def event(sequence: int = 1, record: dict[str, Any] | None = None) -> InputEvent:
    return InputEvent(input_event_id(key(), sequence), TENANT, key().run_id, key().stream_id,
                      sequence,
                      record if record is not None else {"sequence": sequence, "payload": "hi"})


async def same_ids_in_two_tenants(sim: Simulation) -> None:
    """Run `RUN`, input stream `s`, one record each, in `TENANT` and in `OTHER_TENANT`."""
    for principal, payload in ((ALICE, "mine"), (NAMESAKE, "theirs")):
        await sim.service.definitions.create(principal, RUN, definition("s", direction="input"))
        await sim.service.appender.append(principal, RUN, "s", [{"payload": payload}])


def assert_told_apart(events: list[tuple[str, str, str, str, int, Any]]) -> None:
    """(event_id, tenant, run, stream, sequence, payload) of two tenants' first inputs."""
    assert sorted(events) == sorted([
        (input_event_id(key(), 1), TENANT, RUN, "s", 1, "mine"),
        (input_event_id(StreamKey(OTHER_TENANT, RUN, "s"), 1), OTHER_TENANT, RUN, "s", 1,
         "theirs")])
    assert input_event_id(key(), 1) != input_event_id(StreamKey(OTHER_TENANT, RUN, "s"), 1)


async def test_the_webhook_posts_the_signed_event_with_its_tenant_and_id(
        receiver: Receiver) -> None:  # noqa: F811
    async with WebhookWaitService(receiver.url, receiver.secret) as service:
        await service.publish(event(7))
    assert receiver.refused == []
    assert receiver.requests == [(event(7).event_id, {
        "event_id": event(7).event_id, "tenant": TENANT, "run_id": key().run_id,
        "stream_id": key().stream_id, "sequence": 7,
        "record": {"sequence": 7, "payload": "hi"}})]
    assert [(e.event_id, e.tenant, e.sequence) for e in receiver.events] == [
        (event(7).event_id, TENANT, 7)]


async def test_a_webhook_signed_with_another_secret_is_refused_by_the_receiver(
        receiver: Receiver) -> None:  # noqa: F811
    async with WebhookWaitService(receiver.url, new_webhook_secret()) as service:
        with pytest.raises(WebhookRejected) as refused:
            await service.publish(event())
    assert (refused.value.status, receiver.refused, receiver.requests) == (
        401, ["bad_signature"], [])


async def test_each_attempt_is_signed_at_its_own_time_and_an_old_one_is_refused(
        receiver: Receiver) -> None:  # noqa: F811
    clock = FakeClock(datetime.now(UTC) - timedelta(hours=1))
    async with WebhookWaitService(receiver.url, receiver.secret, clock=clock) as service:
        with pytest.raises(WebhookRejected):
            await service.publish(event())  # as a request captured an hour ago, replayed
        clock.advance(3600)
        await service.publish(event())
    assert receiver.refused == ["timestamp_outside_window"]
    assert [e.event_id for e in receiver.events] == [event().event_id]


async def test_a_non_2xx_answer_raises_so_the_row_is_retried(receiver: Receiver) -> None:  # noqa: F811
    receiver.statuses = [503, 302]
    async with WebhookWaitService(receiver.url, receiver.secret) as service:
        with pytest.raises(WebhookRejected) as unavailable:
            await service.publish(event())
        with pytest.raises(WebhookRejected) as redirected:
            await service.publish(event())
    assert (unavailable.value.status, redirected.value.status) == (503, 302)


async def test_an_unreachable_webhook_raises(receiver: Receiver) -> None:  # noqa: F811
    url = receiver.url.replace("/hook", "/no-such-path")
    async with WebhookWaitService(url, receiver.secret) as service:
        with pytest.raises(WebhookRejected):
            await service.publish(event())
    async with WebhookWaitService("http://127.0.0.1:9/hook", receiver.secret,
                                  timeout_seconds=5) as service:
        with pytest.raises(Exception):  # noqa: B017 (connection refused, whatever its type)
            await service.publish(event())


async def test_the_dispatcher_redelivers_through_the_webhook_with_the_same_id(
        receiver: Receiver) -> None:  # noqa: F811
    sim = simulation()
    await make_stream(sim, direction="input")
    await append_numbers(sim, 1, 2)
    receiver.statuses = [500]
    async with WebhookWaitService(receiver.url, receiver.secret) as service:
        dispatcher = InputDispatcher(sim.ports.outbox, sim.ports.store, service, sim.ports.clock,
                                     NodeSettings())
        # Record 1 fails and backs off; record 2 waits behind it (head-of-line, ADR 0057).
        assert await dispatcher.dispatch_once("w") == 0
        fake_clock(sim).advance(backoff_seconds(1))
        assert await dispatcher.dispatch_once("w") == 2
    ids = [header for header, _ in receiver.requests]
    assert ids == [input_event_id(key(), 1), input_event_id(key(), 1),
                   input_event_id(key(), 2)]
    assert all(body["event_id"] == header for header, body in receiver.requests)
    assert receiver.refused == []


async def test_two_tenants_same_run_and_stream_are_told_apart_in_memory() -> None:
    sim = simulation()
    await same_ids_in_two_tenants(sim)
    assert await sim.service.dispatcher.dispatch_once("w") == 2
    assert_told_apart([(e.event_id, e.tenant, e.run_id, e.stream_id, e.sequence,
                        e.record["payload"]) for e in sim.workflow.events])


async def test_two_tenants_same_run_and_stream_are_told_apart_by_the_webhook(
        receiver: Receiver) -> None:  # noqa: F811
    sim = simulation()
    await same_ids_in_two_tenants(sim)
    async with WebhookWaitService(receiver.url, receiver.secret) as service:
        dispatcher = InputDispatcher(sim.ports.outbox, sim.ports.store, service, sim.ports.clock,
                                     NodeSettings())
        assert await dispatcher.dispatch_once("w") == 2
    assert receiver.refused == []
    assert_told_apart([(e.event_id, e.tenant, e.run_id, e.stream_id, e.sequence,
                        e.record["payload"]) for e in receiver.events])
    assert [header for header, _ in receiver.requests] == [e.event_id for e in receiver.events]


@pytest.mark.postgres
async def test_notify_publishes_the_event_on_the_channel(pg_dsn: str) -> None:  # noqa: F811
    adapters = await open_postgres(pg_dsn, migrate=False, listen=False)
    listener = await asyncpg.connect(pg_dsn)
    heard: asyncio.Queue[str] = asyncio.Queue()
    await listener.add_listener("runnel_test_events",
                                lambda *args: heard.put_nowait(args[3]))
    try:
        service = PostgresNotifyWaitService(adapters.pool, "runnel_test_events")
        await service.publish(event(3))
        small = json.loads(await asyncio.wait_for(heard.get(), DEADLINE))
        assert small == {"event_id": event(3).event_id, "tenant": TENANT,
                         "run_id": key().run_id, "stream_id": key().stream_id, "sequence": 3,
                         "record": {"sequence": 3, "payload": "hi"}}
        await service.publish(event(4, {"payload": "x" * 9000}))
        large = json.loads(await asyncio.wait_for(heard.get(), DEADLINE))
        assert (large["event_id"], large["tenant"], large["record_omitted"]) == (
            event(4).event_id, TENANT, True)
        assert "record" not in large
    finally:
        await listener.close()
        await adapters.close()


@pytest.mark.postgres
async def test_two_tenants_same_run_and_stream_are_told_apart_by_notify(
        pg_dsn: str) -> None:  # noqa: F811
    """Through the Postgres outbox: the tenant comes from the stream row each outbox row
    belongs to, so rows written before this change are delivered with it too."""
    adapters = await open_postgres(pg_dsn, migrate=False, listen=False)
    listener = await asyncpg.connect(pg_dsn)
    heard: asyncio.Queue[str] = asyncio.Queue()
    await listener.add_listener("runnel_test_events",
                                lambda *args: heard.put_nowait(args[3]))
    try:
        service = service_on(adapters)
        for principal, payload in ((ALICE, "mine"), (NAMESAKE, "theirs")):
            await service.definitions.create(principal, RUN, definition("s", direction="input"))
            await service.appender.append(principal, RUN, "s", [{"payload": payload}])
        notify = PostgresNotifyWaitService(adapters.pool, "runnel_test_events")
        dispatcher = InputDispatcher(adapters.outbox, adapters.reader, notify, SystemClock(),
                                     NodeSettings())
        assert await dispatcher.dispatch_once("w") == 2
        bodies = [json.loads(await asyncio.wait_for(heard.get(), DEADLINE)) for _ in range(2)]
        assert_told_apart([(b["event_id"], b["tenant"], b["run_id"], b["stream_id"],
                            b["sequence"], b["record"]["payload"]) for b in bodies])
    finally:
        await listener.close()
        await adapters.close()
