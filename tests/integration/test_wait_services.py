"""The workflow wait-service adapters: webhook against a local receiver, NOTIFY on Postgres."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import asyncpg
import pytest

from adapters.memory.simulation import simulation
from adapters.postgres import open_postgres
from adapters.postgres.wait_notify import PostgresNotifyWaitService
from adapters.webhook import WebhookRejected, WebhookWaitService
from application.delivery import InputDispatcher, backoff_seconds
from application.node import NodeSettings
from application.ports import InputEvent
from domain.identifiers import input_event_id
from tests.application.support import append_numbers, fake_clock, key, make_stream
from tests.integration.webhook_receiver import Receiver, receiver  # noqa: F401  (fixture)
from tests.pg import pg_dsn, pg_template  # noqa: F401  (fixtures)

DEADLINE = 30.0  # an upper bound for a notification to arrive; never asserted as a duration


def event(sequence: int = 1, record: dict[str, Any] | None = None) -> InputEvent:
    return InputEvent(input_event_id(key(), sequence), key().run_id, key().stream_id, sequence,
                      record if record is not None else {"sequence": sequence, "payload": "hi"})


async def test_the_webhook_posts_the_event_with_its_id_as_idempotency_key(
        receiver: Receiver) -> None:  # noqa: F811
    async with WebhookWaitService(receiver.url) as service:
        await service.publish(event(7))
    assert receiver.requests == [(event(7).event_id, {
        "event_id": event(7).event_id, "run_id": key().run_id, "stream_id": key().stream_id,
        "sequence": 7, "record": {"sequence": 7, "payload": "hi"}})]


async def test_a_non_2xx_answer_raises_so_the_row_is_retried(receiver: Receiver) -> None:  # noqa: F811
    receiver.statuses = [503, 302]
    async with WebhookWaitService(receiver.url) as service:
        with pytest.raises(WebhookRejected) as unavailable:
            await service.publish(event())
        with pytest.raises(WebhookRejected) as redirected:
            await service.publish(event())
    assert (unavailable.value.status, redirected.value.status) == (503, 302)


async def test_an_unreachable_webhook_raises(receiver: Receiver) -> None:  # noqa: F811
    url = receiver.url.replace("/hook", "/no-such-path")
    async with WebhookWaitService(url) as service:
        with pytest.raises(WebhookRejected):
            await service.publish(event())
    async with WebhookWaitService("http://127.0.0.1:9/hook", timeout_seconds=5) as service:
        with pytest.raises(Exception):  # noqa: B017 (connection refused, whatever its type)
            await service.publish(event())


async def test_the_dispatcher_redelivers_through_the_webhook_with_the_same_id(
        receiver: Receiver) -> None:  # noqa: F811
    sim = simulation()
    await make_stream(sim, direction="input")
    await append_numbers(sim, 1, 2)
    receiver.statuses = [500]
    async with WebhookWaitService(receiver.url) as service:
        dispatcher = InputDispatcher(sim.outbox, sim.store, service, sim.clock, NodeSettings())
        assert await dispatcher.dispatch_once("w") == 1
        fake_clock(sim).advance(backoff_seconds(1))
        assert await dispatcher.dispatch_once("w") == 1
    ids = [header for header, _ in receiver.requests]
    assert sorted(ids) == sorted([input_event_id(key(), 1), input_event_id(key(), 1),
                                  input_event_id(key(), 2)])
    assert all(body["event_id"] == header for header, body in receiver.requests)


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
        assert small == {"event_id": event(3).event_id, "run_id": key().run_id,
                         "stream_id": key().stream_id, "sequence": 3,
                         "record": {"sequence": 3, "payload": "hi"}}
        await service.publish(event(4, {"payload": "x" * 9000}))
        large = json.loads(await asyncio.wait_for(heard.get(), DEADLINE))
        assert (large["event_id"], large["record_omitted"]) == (event(4).event_id, True)
        assert "record" not in large
    finally:
        await listener.close()
        await adapters.close()
