"""The region write fence with real server processes (ADR 0016): a node of region `us` is
fenced with `runnel fence us` while producers write through it. Once the command has
answered, that node stores nothing (every append answers 503 `region_fenced` and the
records table does not grow) while a node of `eu` on the same database writes on;
`runnel unfence us` lets it write again, without a restart."""

from __future__ import annotations

import asyncio
import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import asyncpg
import httpx
import pytest

from tests.http.support import assert_problem

REPO = Path(__file__).parents[2]
PRODUCERS = 4
AFTER_THE_FENCE = 40
"""Appends every producer sends after the fence answered (each must be refused)."""


def placement(region: str) -> dict[str, object]:
    return {"metadata_home": region, "object_regions": [region],
            "client_egress_regions": [region], "log_region": region}


@pytest.fixture(scope="module")
def node_env() -> tuple[dict[str, str], dict[str, str]]:
    return {"RUNNEL_REGION": "us"}, {"RUNNEL_REGION": "eu"}


async def runnel(database: str, *args: str) -> str:
    """`runnel …` as an operator runs it, without blocking the producers meanwhile."""
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "entrypoints.commands", *args, cwd=REPO,
        env={**os.environ, "RUNNEL_DATABASE_URL": database},
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    out, err = await asyncio.wait_for(process.communicate(), 120)
    assert process.returncode == 0, err.decode()
    return out.decode()


async def stored(database: str, run_id: str, stream_id: str) -> list[int]:
    """The sequences in the records table, read directly (not through any node)."""
    connection = await asyncpg.connect(database)
    try:
        rows = await connection.fetch(
            "SELECT r.sequence FROM records AS r JOIN streams AS s ON s.id = r.stream "
            "WHERE s.tenant = 't1' AND s.run_id = $1 AND s.stream_id = $2 ORDER BY r.sequence",
            run_id, stream_id)
    finally:
        await connection.close()
    return [row["sequence"] for row in rows]


@dataclass(frozen=True)
class Append:
    sent: float
    status: int
    code: str | None
    sequences: tuple[int, ...]


async def produce(client: httpx.AsyncClient, path: str, producer: int,
                  fence_answered: list[float], log: list[Append]) -> None:
    """Append one record at a time until AFTER_THE_FENCE appends went out after the fence."""
    after = 0
    n = 0
    while after < AFTER_THE_FENCE:
        sent = time.monotonic()
        if fence_answered and sent > fence_answered[0]:
            after += 1
        response = await client.post(path, json={"records": [{"payload": [producer, n]}]})
        n += 1
        body = response.json()
        log.append(Append(sent, response.status_code, body.get("code"),
                          tuple(body.get("sequences", ()))))
        await asyncio.sleep(0.002)


async def test_a_fenced_node_stores_nothing_once_the_fence_answered_until_unfenced(
        clients: tuple[httpx.AsyncClient, httpx.AsyncClient], database: str,
        run_id: str) -> None:
    in_us, in_eu = clients
    for client, region in ((in_us, "us"), (in_eu, "eu")):
        created = await client.post(f"/runs/{run_id}/streams", json={
            "stream_id": region, "content_class": "x", "placement": placement(region)})
        assert created.status_code == 201, created.text
    path = f"/runs/{run_id}/streams/us/records"
    fence_answered: list[float] = []
    log: list[Append] = []
    producers = [asyncio.create_task(produce(in_us, path, n, fence_answered, log))
                 for n in range(PRODUCERS)]
    async with asyncio.timeout(60):
        while sum(append.status == 201 for append in log) < 20:  # the node is writing
            await asyncio.sleep(0.01)

    printed = await runnel(database, "fence", "us")
    fence_answered.append(time.monotonic())
    assert printed.startswith("region us fenced (epoch ")
    at_the_fence = await stored(database, run_id, "us")
    # The other region writes on while `us` is fenced.
    other = await in_eu.post(f"/runs/{run_id}/streams/eu/records",
                             json={"records": [{"payload": "eu"}]})
    assert other.status_code == 201, other.text
    await asyncio.gather(*producers)

    later = [append for append in log if append.sent > fence_answered[0]]
    assert len(later) >= PRODUCERS * AFTER_THE_FENCE
    assert {(append.status, append.code) for append in later} == {(503, "region_fenced")}
    assert await stored(database, run_id, "us") == at_the_fence  # nothing new, by direct count
    acknowledged = sorted(seq for append in log if append.status == 201
                          for seq in append.sequences)
    assert acknowledged == at_the_fence == list(range(1, len(at_the_fence) + 1))
    refused = await in_us.post(path, json={"records": [{"payload": "late"}]})
    assert_problem(refused, 503, "region_fenced")
    assert refused.json()["region"] == "us"
    # A fence stops writes, not reads.
    page = await in_us.get(path, params={"after": 0, "limit": 1000})
    assert [record["sequence"] for record in page.json()["records"]] == at_the_fence

    assert (await runnel(database, "unfence", "us")).startswith("region us unfenced")
    again = await in_us.post(path, json={"records": [{"payload": "again"}]})
    assert again.status_code == 201, again.text
    assert again.json()["sequences"] == [len(at_the_fence) + 1]
    assert await stored(database, run_id, "us") == [*at_the_fence, len(at_the_fence) + 1]
