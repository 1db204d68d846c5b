"""Close after live across nodes (ADR 0056): two `runnel serve` processes on one Postgres,
the chunks published on one, the close on the other, a `?live=true` reader on each. Every
reader gets every chunk answered before the close, then `end`, however the race falls."""

from __future__ import annotations

import httpx
import pytest

from tests.http.support import create_stream
from tests.http.test_live import subscribe
from tests.http.test_live_before_close import chunks_then_close

TRIES = 30


@pytest.mark.parametrize("publisher", [0, 1])
async def test_chunks_from_one_node_reach_both_nodes_readers_before_the_other_nodes_close(
        clients: tuple[httpx.AsyncClient, httpx.AsyncClient], run_id: str,
        publisher: int) -> None:
    on_publisher, on_closer = clients[publisher], clients[1 - publisher]
    for attempt in range(TRIES):
        stream_id = f"s{attempt}"
        await create_stream(on_publisher, run_id, stream_id)
        readers = [await subscribe(client, run_id, stream_id, live=True) for client in clients]
        await chunks_then_close(on_publisher, on_closer, readers, run_id, stream_id, attempt)
