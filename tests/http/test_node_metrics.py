"""`runnel serve`'s /metrics on Postgres carries the committer, LISTEN, pool, store and
process figures, and they move with the requests; the memory backend has none of the
Postgres families, and still the process collectors."""

from __future__ import annotations

import httpx
from litestar.testing import AsyncTestClient
from pydantic import SecretStr

from entrypoints.composition.settings import Settings
from entrypoints.http.app import create_app
from tests.http.server import METRICS, METRICS_TOKEN, RunnelServer
from tests.http.support import append, create_stream
from tests.metrics_text import Samples

POSTGRES_FAMILIES = (
    "runnel_group_commit_groups_total", "runnel_group_commit_units_total",
    "runnel_group_commit_optimistic_groups_total", "runnel_group_commit_conflicts_total",
    "runnel_group_commit_failed_groups_total", "runnel_group_commit_fenced_groups_total",
    "runnel_group_commit_size_bucket", "runnel_group_commit_queued",
    "runnel_listen_connected", "runnel_listen_reconnects_total", "runnel_db_pool_size",
    "runnel_db_pool_max_size", "runnel_db_pool_in_use", "runnel_db_pool_waiting",
    "runnel_outbox_depth", "runnel_outbox_oldest_age_seconds", "runnel_consumer_lag_max",
    "runnel_consumer_lag_sum", "runnel_consumers_lagging")
PROCESS_FAMILIES = ("process_cpu_seconds_total", "process_resident_memory_bytes",
                    "process_open_fds", "python_gc_collections_total", "python_info")


async def scrape(url: str) -> Samples:
    async with httpx.AsyncClient(timeout=30) as client:
        return Samples((await client.get(url + "/metrics", headers=METRICS)).text)


async def test_an_append_moves_the_committer_and_the_lag_of_its_consumer(
        api: httpx.AsyncClient, server: RunnelServer, run_id: str) -> None:
    await create_stream(api, run_id, consumers=["ui"])
    before = await scrape(server.url)
    for name in (*POSTGRES_FAMILIES, *PROCESS_FAMILIES):
        assert name in before.names, name
    assert before.get("runnel_listen_connected") == 1
    await append(api, run_id, "s", ["a", "b", "c"])
    after = await scrape(server.url)
    for name in ("runnel_group_commit_groups_total", "runnel_group_commit_units_total",
                 "runnel_group_commit_size_count"):
        assert after.get(name) == (before.get(name) or 0) + 1, name
    assert after.get("runnel_consumer_lag_sum") == (before.get("runnel_consumer_lag_sum")
                                                    or 0) + 3
    assert (after.get("runnel_consumer_lag_max") or 0) >= 3
    assert (after.get("runnel_db_pool_size") or 0) >= 1


async def test_the_memory_backend_exports_no_postgres_figures_but_the_process_ones() -> None:
    settings = Settings(storage="memory", jwt_secret=SecretStr("in-process-secret-0123456789abcd"),
                        workers=False, metrics_token=SecretStr(METRICS_TOKEN))
    async with AsyncTestClient(create_app(settings)) as client:
        samples = Samples((await client.get("/metrics", headers=METRICS)).text)
    assert not set(POSTGRES_FAMILIES) & samples.names
    assert set(PROCESS_FAMILIES) <= samples.names
    assert samples.get("runnel_input_pending") == 0
