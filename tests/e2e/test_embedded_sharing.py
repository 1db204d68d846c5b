"""Several processes on one embedded Postgres (ADR 0052): a `runnel` command that attaches
to the cluster a running `runnel serve` uses never stops it; the last live process that is
attached stops it, whoever started it, and a process that died without detaching (SIGKILL)
neither keeps the cluster up for ever nor takes it down for the others."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from entrypoints.commands.worker import READY
from tests.e2e.test_cli import embedded_postgres_running
from tests.embedded_dirs import embedded_dir
from tests.http.server import SECRET, RunnelServer, bearer, token

__all__ = ["embedded_dir"]

REPO = Path(__file__).parents[2]
COMMAND_SECONDS = 120
RUN = "shared"
STREAM = "s"
ADMIN = bearer(token(tenant="dev", scopes=("streams:read", "streams:write", "streams:admin")))
EMBEDDED = {"RUNNEL_DATABASE_URL": None, "RUNNEL_STORAGE": None}


def environment(data_dir: Path) -> dict[str, str]:
    kept = {name: value for name, value in os.environ.items() if not name.startswith("RUNNEL_")}
    return {**kept, "PYTHONPATH": str(REPO), "RUNNEL_DATA_DIR": str(data_dir),
            "RUNNEL_JWT_SECRET": SECRET, "RUNNEL_WORKER_METRICS_PORT": "0"}


def runnel(data_dir: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "entrypoints.commands", *args], cwd=REPO,
                          capture_output=True, text=True, timeout=COMMAND_SECONDS,
                          env=environment(data_dir))


def append(server: RunnelServer, payload: str) -> httpx.Response:
    return httpx.post(f"{server.api}/runs/{RUN}/streams/{STREAM}/records", headers=ADMIN,
                      json={"records": [{"payload": payload}]}, timeout=30)


def assert_serving(server: RunnelServer, after: str) -> None:
    ready = httpx.get(server.url + "/readyz", timeout=30)
    assert ready.status_code == 200, f"after {after}: {ready.text}"
    appended = append(server, after)
    assert appended.status_code == 201, f"after {after}: {appended.text}"


@pytest.fixture
def server(embedded_dir: Path) -> Iterator[RunnelServer]:
    started = RunnelServer.start(EMBEDDED, embedded_dir)
    try:
        created = httpx.post(f"{started.api}/runs/{RUN}/streams", headers=ADMIN,
                             json={"stream_id": STREAM, "content_class": "output.text"})
        assert created.status_code == 201, created.text
        yield started
    finally:
        started.stop()


def test_every_command_against_a_running_server_leaves_its_database_up(
        server: RunnelServer, embedded_dir: Path) -> None:
    data_dir = embedded_dir
    assert_serving(server, "start")
    minted = runnel(data_dir, "token", "--tenant", "dev", "--sub", "cli", "--scopes",
                    "streams:read", "--ttl", "600")
    assert minted.returncode == 0, minted.stderr
    tailed = "closed"
    created = httpx.post(f"{server.api}/runs/{RUN}/streams", headers=ADMIN,
                         json={"stream_id": tailed, "content_class": "output.text"})
    assert created.status_code == 201, created.text
    assert httpx.post(f"{server.api}/runs/{RUN}/streams/{tailed}/close",
                      headers=ADMIN).status_code == 200
    commands: list[tuple[str, ...]] = [
        ("migrate",), ("config",), ("version",), ("log-id", RUN),
        ("revoke", "some-token-id", "--tenant", "dev"),
        ("tail", RUN, tailed, "--url", server.url, "--token", minted.stdout.strip()),
    ]
    for command in commands:
        ran = runnel(data_dir, *command)
        assert ran.returncode == 0, (command, ran.stdout, ran.stderr)
        assert_serving(server, " ".join(command))

    fenced = runnel(data_dir, "fence", "local")
    assert fenced.returncode == 0, fenced.stderr
    refused = append(server, "while fenced")
    assert refused.status_code == 503 and refused.json()["code"] == "region_fenced", refused.text
    unfenced = runnel(data_dir, "unfence", "local")
    assert unfenced.returncode == 0, unfenced.stderr
    assert_serving(server, "unfence")

    worker = subprocess.Popen([sys.executable, "-m", "entrypoints.commands", "worker"], cwd=REPO,
                              env=environment(data_dir), stdout=subprocess.PIPE,
                              stderr=subprocess.DEVNULL, text=True)
    try:
        assert worker.stdout is not None
        assert worker.stdout.readline().startswith(READY)
        assert_serving(server, "worker started")
        worker.send_signal(signal.SIGTERM)
        worker.wait(COMMAND_SECONDS)
    finally:
        if worker.poll() is None:
            worker.kill()
            worker.wait()
    assert_serving(server, "worker stopped")


def test_a_server_that_attached_outlives_the_command_that_started_the_cluster(
        embedded_dir: Path) -> None:
    """The reverse case: a short-lived process starts the cluster, `serve` attaches to it,
    then the starter leaves: the server keeps its database, and stops it at its own exit."""
    data_dir = embedded_dir
    starter = subprocess.Popen(
        [sys.executable, "-c", "import sys; from adapters.postgres.embedded import "
         "start_embedded; e = start_embedded(sys.argv[1]); print('up', flush=True); "
         "sys.stdin.readline(); e.stop()", str(data_dir)],
        cwd=REPO, env=environment(data_dir), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
        text=True)
    try:
        assert starter.stdout is not None and starter.stdin is not None
        assert starter.stdout.readline().strip() == "up"
        server = RunnelServer.start(EMBEDDED, data_dir)
        try:
            created = httpx.post(f"{server.api}/runs/{RUN}/streams", headers=ADMIN,
                                 json={"stream_id": STREAM, "content_class": "output.text"})
            assert created.status_code == 201, created.text
            starter.stdin.write("\n")
            starter.stdin.flush()
            assert starter.wait(COMMAND_SECONDS) == 0
            assert_serving(server, "the starter's exit")
        finally:
            server.stop()
        assert not embedded_postgres_running(data_dir)
    finally:
        if starter.poll() is None:
            starter.kill()
            starter.wait()


def test_a_killed_server_neither_pins_the_cluster_nor_breaks_the_next_start(
        embedded_dir: Path) -> None:
    data_dir = embedded_dir
    server = RunnelServer.start(EMBEDDED, data_dir)
    server.process.kill()
    server.process.wait()
    assert embedded_postgres_running(data_dir)  # orphaned: nobody stopped it
    migrated = runnel(data_dir, "migrate")
    assert migrated.returncode == 0, migrated.stderr
    # The killed server's entry is stale: the command was the last live user and stopped it.
    assert not embedded_postgres_running(data_dir)
    again = RunnelServer.start(EMBEDDED, data_dir)
    try:
        assert httpx.get(again.url + "/readyz").status_code == 200
    finally:
        again.stop()
    assert not embedded_postgres_running(data_dir)


def test_commands_started_at_once_on_a_fresh_directory_all_succeed_and_stop_it(
        embedded_dir: Path) -> None:
    data_dir = embedded_dir
    started = [subprocess.Popen([sys.executable, "-m", "entrypoints.commands", "migrate"],
                                cwd=REPO, env=environment(data_dir), stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True) for _ in range(3)]
    results = [process.communicate(timeout=COMMAND_SECONDS) for process in started]
    for process, (out, err) in zip(started, results, strict=True):
        assert process.returncode == 0, out + err
    deadline = time.monotonic() + 30
    while embedded_postgres_running(data_dir):  # pg_ctl stop -w has returned; bound anyway
        assert time.monotonic() < deadline, "the last command left the cluster running"
        time.sleep(0.1)
