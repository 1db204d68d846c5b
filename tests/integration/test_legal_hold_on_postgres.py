"""On Postgres: a legal hold stops pruning, reaping and every queued body deletion until it
is released; afterwards the workers' use cases finish the job."""

from __future__ import annotations

import hashlib
from collections.abc import AsyncIterator

import pytest

from adapters.memory.clock import FakeClock
from adapters.postgres import open_postgres
from application.body_deletion import HOLD_RECHECK_SECONDS
from application.node import NodeSettings
from domain.object_intent import IntentState, ObjectPins
from domain.principal import Principal
from entrypoints.testing.simulation import simulation
from tests.integration.support import RUN, WRITER, definition
from tests.pg import pg_dsn, pg_template  # noqa: F401  (fixtures)

pytestmark = pytest.mark.postgres

ADMIN = Principal("root", WRITER.tenant, frozenset({"streams:admin"}))
TTL = 60


async def body(data: bytes) -> AsyncIterator[bytes]:
    yield data


def pins(data: bytes, idempotency_key: str) -> ObjectPins:
    return ObjectPins(idempotency_key, hashlib.sha256(data).hexdigest(), len(data),
                      "application/pdf")


async def test_a_hold_stops_pruning_reaping_and_deleting_until_released(
        pg_dsn: str) -> None:  # noqa: F811
    adapters = await open_postgres(pg_dsn, migrate=False, listen=False)
    clock = FakeClock()
    sim = simulation(NodeSettings(object_intent_ttl_seconds=TTL), clock, backend=adapters)
    service, objects = sim.service, sim.ports.objects
    try:
        await service.definitions.create(WRITER, RUN, definition("s",
                                                                 retention={"max_records": 1}))
        kept, _ = await service.objects.prepare(WRITER, RUN, "s", pins(b"kept", "kept"))
        await service.objects.upload(WRITER, RUN, "s", kept.object_id, body(b"kept"))
        await service.objects.commit(WRITER, RUN, "s", kept.object_id)
        await service.appender.append(WRITER, RUN, "s", [{"payload": "newer"}])
        assert await service.retention.prune_all() == 1  # the object record goes
        await service.objects.prepare(WRITER, RUN, "s", pins(b"late", "late"))
        stale, _ = await service.objects.prepare(WRITER, RUN, "s", pins(b"stale", "stale"))
        await service.objects.upload(WRITER, RUN, "s", stale.object_id, body(b"stale"))
        await service.appender.append(WRITER, RUN, "s", [{"payload": "newest"}])

        await service.lifecycle.set_legal_hold(ADMIN, RUN, "s", True, "audit")
        clock.advance(TTL + 1)
        assert await service.retention.prune_all() == 0
        assert await service.intent_reaper.reap_once() == 0
        assert await service.body_deleter.delete_once("w") == 0
        clock.advance(HOLD_RECHECK_SECONDS)
        assert await service.body_deleter.delete_once("w") == 0
        assert sorted(objects.keys("local")) == sorted([kept.object_key, stale.object_key])
        result = await service.reading.read(WRITER, RUN, "s", after=1)
        assert [record.payload for record in result.page.records] == ["newer", "newest"]

        await service.lifecycle.set_legal_hold(ADMIN, RUN, "s", False, None)
        assert await service.retention.prune_all() == 1
        assert await service.intent_reaper.reap_once() == 2
        clock.advance(HOLD_RECHECK_SECONDS)
        # kept (pruned record), stale (uploaded) and late (never uploaded: nothing to find)
        assert await service.body_deleter.delete_once("w") == 3
        assert objects.keys("local") == []
        expired = await adapters.store.load_intent(stale.stream_key, stale.object_id)
        assert expired is not None and expired.current_state is IntentState.EXPIRED
        assert await service.body_deleter.delete_once("w") == 0
    finally:
        await adapters.close()
