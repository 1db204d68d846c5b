"""Two `runnel serve` processes on one Postgres database behave as one service (SPEC §11):
appends through one reach readers of the other, and credit, acks and sequences stay
correct across them because they are decided under the stream-row lock, from durable state."""

from __future__ import annotations

import asyncio
from urllib.parse import urlsplit

import httpx
import psutil
import pytest

from tests.http.server import RunnelServer, bearer, token
from tests.http.support import (
    append,
    assert_problem,
    count_records,
    create_stream,
    has_event,
    read_events,
    records_of,
    wait_for_metric,
)

MAX_POOL = 10
"""Pool connections of one process (open_postgres's default); the LISTEN connection is one more."""


@pytest.fixture(scope="module")
def node_env() -> tuple[dict[str, str], dict[str, str]]:
    return {"RUNNEL_KEEPALIVE_SECONDS": "1"}, {"RUNNEL_KEEPALIVE_SECONDS": "1"}


async def test_an_append_through_one_node_reaches_a_subscriber_of_the_other(
        clients: tuple[httpx.AsyncClient, httpx.AsyncClient], run_id: str) -> None:
    on_a, on_b = clients
    await create_stream(on_a, run_id)

    async def produce_on_a() -> None:
        for n in range(1, 6):
            await append(on_a, run_id, "s", [n])
        await on_a.post(f"/runs/{run_id}/streams/s/close")

    tasks: list[asyncio.Task[None]] = []
    events = await read_events(on_b, f"/runs/{run_id}/streams/s/subscribe",
                               until=has_event("end"),
                               on_open=lambda: tasks.append(asyncio.create_task(produce_on_a())))
    await tasks[0]
    assert records_of(events) == [1, 2, 3, 4, 5]


async def test_concurrent_appends_through_both_nodes_are_dense_and_every_reader_sees_all(
        clients: tuple[httpx.AsyncClient, httpx.AsyncClient], run_id: str) -> None:
    on_a, on_b = clients
    await create_stream(on_a, run_id)
    per_node = 30
    appended: list[int] = []

    async def produce() -> None:
        batches = await asyncio.gather(*(append(client, run_id, "s", [n])
                                         for client in (on_a, on_b) for n in range(per_node)))
        appended.extend(sequence for batch in batches for sequence in batch)

    tasks: list[asyncio.Task[None]] = []

    async def read(client: httpx.AsyncClient, starts_producer: bool) -> list[int]:
        def start() -> None:
            if starts_producer:
                tasks.append(asyncio.create_task(produce()))
        events = await read_events(client, f"/runs/{run_id}/streams/s/subscribe",
                                   until=count_records(2 * per_node), on_open=start)
        return records_of(events)

    seen_on_a, seen_on_b = await asyncio.gather(read(on_a, False), read(on_b, True))
    await tasks[0]
    everything = list(range(1, 2 * per_node + 1))
    assert sorted(appended) == everything
    assert seen_on_a == everything
    assert seen_on_b == everything


async def test_credit_and_acks_are_decided_from_durable_state_across_nodes(
        clients: tuple[httpx.AsyncClient, httpx.AsyncClient], run_id: str) -> None:
    on_a, on_b = clients
    await create_stream(on_a, run_id, credit={"max_unread_items": 3},
                        consumers=[{"id": "ui", "principals": ["alice"]}])
    await append(on_a, run_id, "s", [1, 2, 3])
    full = await on_b.post(f"/runs/{run_id}/streams/s/records", json={"records": [{"payload": 4}]})
    assert_problem(full, 429, "backpressure")

    acked = await on_b.post(f"/runs/{run_id}/streams/s/consumers/ui/ack", json={"sequence": 2})
    assert acked.json() == {"consumer_id": "ui", "acked": 2}
    assert await append(on_a, run_id, "s", [4, 5]) == [4, 5]
    full_again = await on_a.post(f"/runs/{run_id}/streams/s/records",
                                 json={"records": [{"payload": 6}]})
    assert_problem(full_again, 429, "backpressure")

    backwards = await on_a.post(f"/runs/{run_id}/streams/s/consumers/ui/ack",
                                json={"sequence": 1})
    assert_problem(backwards, 409, "ack_regression")
    someone_else = await on_a.post(f"/runs/{run_id}/streams/s/consumers/ui/ack",
                                   json={"sequence": 3}, headers=bearer(token(sub="bob")))
    assert_problem(someone_else, 403, "consumer_scope")
    status = (await on_a.get(f"/runs/{run_id}/streams/s")).json()["status"]
    assert (status["head"], status["consumers"]) == (5, {"ui": 2})


def database_connections(server: RunnelServer) -> int:
    """TCP connections from the server process to Postgres."""
    port = urlsplit(server.api).port
    return sum(1 for connection in psutil.Process(server.process.pid).net_connections("tcp")
               if connection.raddr and connection.raddr.port == 5432
               and connection.laddr.port != port)


async def test_many_readers_on_a_node_share_its_one_listen_connection(
        pair: tuple[RunnelServer, RunnelServer],
        clients: tuple[httpx.AsyncClient, httpx.AsyncClient], run_id: str) -> None:
    _, b = pair
    on_a, on_b = clients
    await create_stream(on_a, run_id)
    readers = 40
    url = f"/runs/{run_id}/streams/s/subscribe"
    async with asyncio.timeout(30):
        streams = [on_b.stream("GET", url, headers=bearer(token(sub=f"reader-{i}")))
                   for i in range(readers)]
        responses = [await stream.__aenter__() for stream in streams]
        try:
            assert all(response.status_code == 200 for response in responses)
            await wait_for_metric(b.url, "runnel_sse_readers", lambda v: v >= readers)
            await append(on_a, run_id, "s", ["hello"])
            for response in responses:
                lines = response.aiter_lines()
                while await anext(lines) != "id: 1":
                    pass
            assert database_connections(b) <= MAX_POOL + 1
        finally:
            for stream in streams:
                await stream.__aexit__(None, None, None)
