"""`runnel worker` serves its metrics on RUNNEL_WORKER_METRICS_PORT: every sweep is
measured there, with the store's figures; a port it cannot bind refuses the start in one
line; SIGTERM closes the port with the workers."""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import sys
from pathlib import Path

import httpx
import pytest

from adapters.postgres import open_postgres
from tests.integration.support import DEADLINE, REPO, RUN, WRITER, definition, service_on
from tests.integration.worker_processes import eventually, start_worker
from tests.metrics_text import Samples
from tests.pg import pg_dsn, pg_template  # noqa: F401  (fixtures)

pytestmark = pytest.mark.postgres


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


async def scrape(url: str) -> Samples:
    async with httpx.AsyncClient(timeout=DEADLINE) as client:
        response = await client.get(url + "/metrics")
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/plain")
    return Samples(response.text)


async def test_the_worker_port_serves_health_and_every_workers_measurements(
        pg_dsn: str, tmp_path: Path) -> None:  # noqa: F811
    adapters = await open_postgres(pg_dsn, migrate=False, listen=False)
    try:
        service = service_on(adapters)
        await service.definitions.create(WRITER, RUN, definition("in", direction="input"))
        await service.appender.append(WRITER, RUN, "in", [{"payload": 1}])
    finally:
        await adapters.close()
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    child = await start_worker(pg_dsn, tmp_path, worker_metrics_port=str(port))
    try:
        async with httpx.AsyncClient(timeout=DEADLINE) as client:
            health = await client.get(url + "/healthz")
            assert (health.status_code, health.json()) == (200, {"status": "ok"})
            assert (await client.get(url + "/nothing")).status_code == 404

        workers = ("input-dispatch", "retention", "intent-reaper", "body-deletion",
                   "orphan-sweep")

        async def every_worker_swept() -> bool:
            samples = await scrape(url)
            return all((samples.get("runnel_worker_sweep_duration_seconds_count",
                                    {"worker": name}) or 0) >= 1 for name in workers)

        await eventually(every_worker_swept)
        samples = await scrape(url)
        for name in workers:
            assert samples.get("runnel_worker_sweep_errors_total", {"worker": name}) == 0
            assert (samples.get("runnel_worker_last_success_timestamp_seconds",
                                {"worker": name}) or 0) > 0
        # No wait service: the input record stays in the outbox, seen from this process.
        assert samples.get("runnel_outbox_depth", {"outbox": "input_deliveries"}) == 1
        assert (samples.get("runnel_outbox_oldest_age_seconds",
                            {"outbox": "input_deliveries"}) or 0) > 0
        assert samples.get("runnel_listen_connected") == 1
        assert (samples.get("runnel_db_pool_size") or 0) >= 1
        assert (samples.get("process_cpu_seconds_total") or 0) > 0
        assert "python_gc_objects_collected_total" in samples.names
    finally:
        child.send_signal(signal.SIGTERM)
        assert await asyncio.wait_for(child.wait(), DEADLINE) == 0
    with pytest.raises(httpx.ConnectError):
        httpx.get(url + "/healthz")


async def test_a_metrics_port_that_is_taken_refuses_the_start_in_one_line(
        pg_dsn: str, tmp_path: Path) -> None:  # noqa: F811
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        env = {"RUNNEL_DATABASE_URL": pg_dsn, "RUNNEL_DATA_DIR": str(tmp_path),
               "RUNNEL_STORAGE": "postgres", "RUNNEL_WORKER_METRICS_PORT": str(port)}
        child = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "entrypoints.commands", "worker", cwd=REPO,
            env={**os.environ, **env}, stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE)
        out, err = await asyncio.wait_for(child.communicate(), DEADLINE)
    assert child.returncode == 2
    lines = err.decode().strip().splitlines()
    refusal = [line for line in lines if "RUNNEL_WORKER_METRICS_PORT" in line]
    assert len(refusal) == 1 and f"127.0.0.1:{port}" in refusal[0], err.decode()
    assert "Traceback" not in err.decode()
    assert out == b""

