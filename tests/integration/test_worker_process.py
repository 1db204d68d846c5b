"""`runnel worker` as its own OS process on Postgres: it prunes, reaps, delivers, sweeps
orphan bodies (never a held stream's), and stops cleanly on SIGTERM."""

from __future__ import annotations

import asyncio
import hashlib
import signal
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from adapters.fs.objects import FilesystemObjectStore
from adapters.postgres import open_postgres
from application.node import NodeSettings
from domain.identifiers import StreamKey, input_event_id
from domain.object_intent import IntentState, ObjectPins
from domain.principal import Principal
from entrypoints.composition.object_stores import OBJECTS_DIR
from tests.integration.support import DEADLINE, RUN, WRITER, definition, service_on
from tests.integration.webhook_receiver import Receiver, receiver  # noqa: F401  (fixture)
from tests.integration.worker_processes import eventually, start_worker
from tests.pg import pg_dsn, pg_template  # noqa: F401  (fixtures)

pytestmark = pytest.mark.postgres

ADMIN = Principal("root", WRITER.tenant, frozenset({"streams:admin"}))


async def one_chunk(data: bytes) -> AsyncIterator[bytes]:
    yield data


async def test_the_worker_process_prunes_reaps_sweeps_and_delivers_then_stops_on_sigterm(
        pg_dsn: str, tmp_path: Path, receiver: Receiver) -> None:  # noqa: F811
    adapters = await open_postgres(pg_dsn, migrate=False)
    try:
        service = service_on(adapters, NodeSettings(object_intent_ttl_seconds=1))
        await service.definitions.create(WRITER, RUN, definition("kept",
                                                                  retention={"max_records": 2}))
        await service.definitions.create(WRITER, RUN, definition("in", direction="input"))
        await service.appender.append(WRITER, RUN, "kept", [{"payload": n} for n in range(5)])
        await service.appender.append(WRITER, RUN, "in", [{"payload": n} for n in range(3)])
        intent, _ = await service.objects.prepare(
            WRITER, RUN, "kept", ObjectPins("o1", "0" * 64, 10, "application/pdf"))
        # Bodies a crash left with nothing recorded: one on a held stream must stay.
        await service.definitions.create(WRITER, RUN, definition("held"))
        await service.lifecycle.set_legal_hold(ADMIN, RUN, "held", True, "audit")
        bodies = FilesystemObjectStore(tmp_path / OBJECTS_DIR, regions=("local",))
        orphan = f"{WRITER.tenant}/{RUN}/kept/00000000-0000-4000-8000-000000000001"
        held = f"{WRITER.tenant}/{RUN}/held/00000000-0000-4000-8000-000000000002"
        for object_key in (orphan, held):
            await bodies.put("local", object_key, one_chunk(b"x"), 1,
                             hashlib.sha256(b"x").hexdigest())

        receiver.statuses = [500]  # the first delivery fails and is retried
        child = await start_worker(pg_dsn, tmp_path, wait_service="webhook",
                                   webhook_url=receiver.url, webhook_secret=receiver.secret,
                                   orphan_grace_seconds="0",
                                   orphan_sweep_seconds="0.05")

        async def swept() -> bool:
            return await bodies.stat("local", orphan) is None

        async def pruned() -> bool:
            stream = await adapters.store.load(intent.stream_key)
            return stream is not None and stream.earliest == 4

        async def delivered() -> bool:
            async with adapters.pool.acquire() as connection:
                done = await connection.fetchval(
                    "SELECT count(*) FROM input_deliveries WHERE done")
            return bool(done == 3)

        async def reaped() -> bool:
            loaded = await adapters.store.load_intent(intent.stream_key, intent.object_id)
            return loaded is not None and loaded.current_state is IntentState.EXPIRED

        await eventually(swept)
        await eventually(pruned)
        await eventually(delivered)
        await eventually(reaped)
        in_key = StreamKey(WRITER.tenant, RUN, "in")
        delivered_ids = {header for header, _ in receiver.requests}
        assert delivered_ids == {input_event_id(in_key, n) for n in (1, 2, 3)}
        assert len(receiver.requests) == 4
        assert await bodies.stat("local", held) is not None  # many sweeps later

        child.send_signal(signal.SIGTERM)
        assert await asyncio.wait_for(child.wait(), DEADLINE) == 0
    finally:
        await adapters.close()
