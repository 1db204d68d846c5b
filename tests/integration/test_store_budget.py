"""An append's waits on the database share one deadline (docs/adr/0059): through a frozen
database every append, the one in a group and those queued behind it, answers
`StoreUnavailable` by its budget, on the default per-statement bounds; once the database
is back each retried key is stored exactly once; a `lock()` under a budget answers by it
too; and a `block` wait for an ack is not spent from the budget."""

from __future__ import annotations

import asyncio
import time

import pytest

from adapters.postgres import PostgresAdapters, open_postgres
from application.node import NodeSettings
from application.ports.errors import StoreUnavailable
from application.store_budget import store_budget
from domain.identifiers import StreamKey
from tests.integration.blackhole_proxy import BlackholeProxy
from tests.integration.support import DEADLINE, RUN, WRITER, definition, service_on
from tests.pg import pg_dsn, pg_template  # noqa: F401  (fixtures)

pytestmark = pytest.mark.postgres

BUDGET = 1.5
MARGIN = 2.0
"""Slack over the budget for an answer to arrive: a behaviour bound, not a benchmark."""


# `through_proxy` keeps the default bounds: a statement may take 15 s, the budget alone
# makes the answer come.


async def _timed_refusal(append: object) -> float:
    began = time.monotonic()
    with pytest.raises(StoreUnavailable):
        await asyncio.wait_for(append, DEADLINE)  # type: ignore[arg-type]
    return time.monotonic() - began


async def test_every_append_waiting_on_a_frozen_database_answers_by_its_budget(
        proxy: BlackholeProxy, through_proxy: PostgresAdapters) -> None:
    service = service_on(through_proxy, NodeSettings(store_budget_seconds=BUDGET))
    await service.definitions.create(WRITER, RUN, definition("s"))
    await service.appender.append(WRITER, RUN, "s", [{"payload": 0, "idempotency_key": "k0"}])
    proxy.pause()
    # One runs in a group on the frozen connection; the others queue behind it (one group
    # per stream at a time) and must not wait for it to give up.
    batches = [[{"payload": n, "idempotency_key": f"k{n}"}] for n in (1, 2, 3)]
    waited = await asyncio.gather(*(_timed_refusal(service.appender.append(
        WRITER, RUN, "s", batch)) for batch in batches))
    assert max(waited) <= BUDGET + MARGIN, waited
    proxy.resume()
    for batch in batches:
        while True:
            try:
                await asyncio.wait_for(service.appender.append(WRITER, RUN, "s", batch),
                                       DEADLINE)
                break
            except StoreUnavailable:
                await asyncio.sleep(0.2)
    page = (await service.reading.read(WRITER, RUN, "s", 0, 10)).page
    assert sorted(record.payload for record in page.records) == [0, 1, 2, 3]


async def test_a_blocked_append_waiting_for_an_ack_longer_than_the_budget_still_stores(
        pg_dsn: str) -> None:  # noqa: F811
    adapters = await open_postgres(pg_dsn, migrate=False)
    try:
        service = service_on(adapters, NodeSettings(store_budget_seconds=0.5))
        await service.definitions.create(WRITER, RUN, definition("s", consumers=["ui"], credit={
            "max_unread_items": 2, "on_unread_full": "block", "block_timeout_seconds": 30}))
        await service.appender.append(WRITER, RUN, "s", [{"payload": 1}, {"payload": 2}])
        blocked = asyncio.create_task(service.appender.append(WRITER, RUN, "s",
                                                              [{"payload": 3}]))
        await asyncio.sleep(1.0)  # waiting for credit, past the budget
        assert not blocked.done()
        await service.acknowledger.ack(WRITER, RUN, "s", "ui", 1)
        assert (await asyncio.wait_for(blocked, DEADLINE)).sequences == (3,)
    finally:
        await adapters.close()


async def test_a_lock_under_a_budget_answers_by_it_waiting_for_its_session_or_its_commit(
        proxy: BlackholeProxy, through_proxy: PostgresAdapters) -> None:
    service = service_on(through_proxy)
    await service.definitions.create(WRITER, RUN, definition("s"))
    key = StreamKey(WRITER.tenant, RUN, "s")

    async def lock(pause_inside: bool) -> None:
        with store_budget(BUDGET):
            async with through_proxy.store.lock(key):
                if pause_inside:
                    proxy.pause()  # the body is done; its group's commit will not answer

    proxy.pause()
    assert await _timed_refusal(lock(pause_inside=False)) <= BUDGET + MARGIN
    proxy.resume()
    await _until_locked(through_proxy, key)
    assert await _timed_refusal(lock(pause_inside=True)) <= BUDGET + MARGIN
    proxy.resume()


async def _until_locked(adapters: PostgresAdapters, key: StreamKey) -> None:
    """The database answers a lock again (after the frozen one was given up)."""
    deadline = time.monotonic() + DEADLINE
    while True:
        try:
            async with adapters.store.lock(key):
                return
        except StoreUnavailable:
            assert time.monotonic() < deadline, "the database never answered again"
            await asyncio.sleep(0.2)
