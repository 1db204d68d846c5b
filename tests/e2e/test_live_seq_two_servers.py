"""Live `seq` across nodes (ADR 0017): two `runnel serve` processes on one Postgres, a
producer whose `POST …/live` requests a load balancer spreads over both, and a
`?live=true` reader on each node. Every reader sees `seq` rise strictly, whichever node
published, and a re-driven position (same source, attempt and index) carries its first
`seq`, so keep-first de-duplication by `seq` drops the copy and never a real chunk."""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.http.server import RunnelServer, bearer, running_server, token
from tests.http.support import create_stream
from tests.http.test_live import Frame, Subscriber, live_frames, publish, subscribe


@pytest.fixture(scope="module")
def env(database: str) -> dict[str, str]:
    return {"RUNNEL_DATABASE_URL": database, "RUNNEL_STORAGE": "postgres",
            "RUNNEL_KEEPALIVE_SECONDS": "1"}


@pytest.fixture(scope="module")
def node_env() -> tuple[dict[str, str], dict[str, str]]:
    return {"RUNNEL_KEEPALIVE_SECONDS": "1"}, {"RUNNEL_KEEPALIVE_SECONDS": "1"}


def client(server: RunnelServer) -> httpx.AsyncClient:
    return httpx.AsyncClient(base_url=server.api, headers=bearer(token()), timeout=30)


def seen(frames: list[Frame]) -> list[tuple[int, Any]]:
    return [(frame.data["seq"], frame.data["data"]) for frame in live_frames(frames)]


def count(n: int) -> Any:
    return lambda frames: len(live_frames(frames)) >= n


def assert_rising(pairs: list[tuple[int, Any]]) -> None:
    seqs = [seq for seq, _ in pairs]
    assert all(a < b for a, b in itertools.pairwise(seqs)), seqs


async def test_every_reader_sees_seq_rise_whichever_node_publishes(
        clients: tuple[httpx.AsyncClient, httpx.AsyncClient], run_id: str) -> None:
    on_a, on_b = clients
    await create_stream(on_a, run_id)
    readers = [await subscribe(on_a, run_id, live=True), await subscribe(on_b, run_id, live=True)]
    try:
        sent: list[str] = []
        for n in range(12):  # plain chunks, then a producer's, each request on the other node
            node = (on_a, on_b)[n % 2]
            body: dict[str, Any] = {"chunks": [f"plain-{n}", f"plain-{n}b"]}
            if n >= 6:
                body = {"chunks": [f"tok-{n}"], "source": "model_turn", "attempt": 1,
                        "index": n - 6}
            assert (await publish(node, run_id, body)).status_code == 202
            sent.extend(body["chunks"])
        views = [seen(await reader.wait_for(count(len(sent)))) for reader in readers]
        for view in views:
            assert_rising(view)
            assert sorted(data for _, data in view) == sorted(sent)
        # All listeners get the NOTIFYs in one commit order: both readers see the same.
        assert views[0] == views[1]
    finally:
        for reader in readers:
            await reader.stop()


async def test_a_re_driven_position_carries_its_first_seq_on_every_node(
        clients: tuple[httpx.AsyncClient, httpx.AsyncClient], run_id: str) -> None:
    on_a, on_b = clients
    await create_stream(on_a, run_id)
    readers = [await subscribe(on_a, run_id, live=True), await subscribe(on_b, run_id, live=True)]
    turn = {"source": "model_turn", "attempt": 1}
    try:
        await publish(on_a, run_id, {"chunks": ["Hel", "lo", " wor"], **turn, "index": 0})
        await publish(on_b, run_id, {"chunks": ["side note"]})  # another producer between
        for reader in readers:
            await reader.wait_for(count(4))
        # The producer re-drives index 1-2 (a retried request), through the other node,
        # then goes on with a new position.
        await publish(on_b, run_id, {"chunks": ["lo", " wor"], **turn, "index": 1})
        for reader in readers:
            await reader.wait_for(count(6))
        await publish(on_a, run_id, {"chunks": ["ld"], **turn, "index": 3})
        views = [seen(await reader.wait_for(count(7))) for reader in readers]
        for view in views:
            first = {data: seq for seq, data in view[:4]}
            assert set(first) == {"Hel", "lo", " wor", "side note"}
            assert view[4:6] == [(first["lo"], "lo"), (first[" wor"], " wor")]
            assert view[6][1] == "ld" and view[6][0] > max(first.values())
            kept = keep_first(view)
            assert [data for _, data in kept] == [data for _, data in view[:4]] + ["ld"]
            assert_rising(kept)
    finally:
        for reader in readers:
            await reader.stop()


async def test_seq_keeps_rising_across_a_restart_of_the_publishing_node(
        env: dict[str, str], clients: tuple[httpx.AsyncClient, httpx.AsyncClient],
        run_id: str, tmp_path: Path) -> None:
    _, on_b = clients
    await create_stream(on_b, run_id)
    reader: Subscriber = await subscribe(on_b, run_id, live=True)
    try:
        for n in range(2):
            with running_server(env, tmp_path / f"c{n}") as c:
                async with client(c) as on_c:
                    await publish(on_c, run_id, {"chunks": [f"boot-{n}"]})
                    await reader.wait_for(count(n + 1))
        await publish(on_b, run_id, {"chunks": ["on b"]})
        view = seen(await reader.wait_for(count(3)))
        assert [data for _, data in view] == ["boot-0", "boot-1", "on b"]
        assert_rising(view)
    finally:
        await reader.stop()


def keep_first(view: list[tuple[int, Any]]) -> list[tuple[int, Any]]:
    known: set[int] = set()
    kept = []
    for seq, data in view:
        if seq not in known:
            known.add(seq)
            kept.append((seq, data))
    return kept
