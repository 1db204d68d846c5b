"""Live `seq` on Postgres (ADR 0017): several processes' buses number one stream's chunks
from one origin, in the commit order every listener receives them in."""

from __future__ import annotations

import asyncio

import pytest

from adapters.postgres import PostgresAdapters, open_postgres
from application.ports.waking import LiveChunk, LiveDraft, WakeSubscription
from domain.identifiers import StreamKey
from tests.integration.support import DEADLINE, RUN, TENANT
from tests.pg import pg_dsn, pg_template  # noqa: F401  (fixtures)

pytestmark = pytest.mark.postgres

KEY = StreamKey(TENANT, RUN, "s")


async def received(subscription: WakeSubscription, n: int) -> list[LiveChunk]:
    chunks = []
    async with asyncio.timeout(DEADLINE):
        while len(chunks) < n:
            signal = await subscription.next(DEADLINE)
            if isinstance(signal, LiveChunk):
                chunks.append(signal)
    return chunks


def turn(data: str, index: int) -> LiveDraft:
    return LiveDraft(KEY, data, source="model_turn", attempt=1, index=index, positioned=True)


async def test_two_processes_number_one_stream_alike_and_in_delivery_order(
        nodes: tuple[PostgresAdapters, PostgresAdapters]) -> None:
    a, b = nodes
    async with a.bus.subscribe(KEY, live=True) as on_a, b.bus.subscribe(KEY, live=True) as on_b:
        for n in range(40):
            await (a, b)[n % 2].bus.publish_live([LiveDraft(KEY, n)])
            if n % 5 == 0:
                await asyncio.sleep(0)  # let both senders run, so their batches interleave
        seen_a, seen_b = await received(on_a, 40), await received(on_b, 40)
    assert seen_a == seen_b
    assert [chunk.seq for chunk in seen_a] == list(range(1, 41))
    assert sorted(chunk.data for chunk in seen_a) == list(range(40))


async def test_a_re_driven_position_through_another_process_keeps_its_seq(
        nodes: tuple[PostgresAdapters, PostgresAdapters]) -> None:
    a, b = nodes
    async with b.bus.subscribe(KEY, live=True) as on_b:
        await a.bus.publish_live([turn("Hel", 0)])
        await a.bus.publish_live([turn("lo", 1)])
        first = await received(on_b, 2)
        await b.bus.publish_live([turn("lo", 1)])
        await b.bus.publish_live([turn("!", 2)])
        later = await received(on_b, 2)
    assert [chunk.seq for chunk in first + later] == [1, 2, 2, 3]


async def test_seq_goes_on_above_what_a_closed_process_numbered(
        pg_dsn: str, nodes: tuple[PostgresAdapters, PostgresAdapters]) -> None:  # noqa: F811
    _, b = nodes
    seen: list[LiveChunk] = []
    async with b.bus.subscribe(KEY, live=True) as on_b:
        for boot in range(2):
            restarted = await open_postgres(pg_dsn, migrate=False)
            try:
                for n in range(3):
                    await restarted.bus.publish_live([LiveDraft(KEY, f"{boot}.{n}")])
                seen += await received(on_b, 3)
            finally:
                await restarted.close()
    assert [(chunk.seq, chunk.data) for chunk in seen] == [
        (1, "0.0"), (2, "0.1"), (3, "0.2"), (4, "1.0"), (5, "1.1"), (6, "1.2")]


async def test_a_process_without_a_listener_still_hands_its_readers_its_own_chunks(
        pg_dsn: str, nodes: tuple[PostgresAdapters, PostgresAdapters]) -> None:  # noqa: F811
    a, _ = nodes
    quiet = await open_postgres(pg_dsn, migrate=False, listen=False)
    try:
        async with quiet.bus.subscribe(KEY, live=True) as local, \
                a.bus.subscribe(KEY, live=True) as remote:
            await quiet.bus.publish_live([LiveDraft(KEY, "mine")])
            assert [c.data for c in await received(local, 1)] == ["mine"]
            assert await received(remote, 1) == [LiveDraft(KEY, "mine").numbered(1)]
    finally:
        await quiet.close()
