"""The `runnel` command as a user runs it: token, migrate, fence, and serve on the embedded
default."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import asyncpg
import httpx
import psutil

from domain.principal import Principal
from entrypoints.auth.tokens import verify_token
from entrypoints.composition.settings import local_jwt_secret
from tests.http.server import RunnelServer
from tests.pg import create_database, drop_database, run_sync

REPO = Path(__file__).parents[2]


def runnel(*args: str, env: dict[str, str]) -> str:
    result = subprocess.run([sys.executable, "-m", "entrypoints.commands", *args],
                            capture_output=True, text=True, check=True, cwd=REPO,
                            env={**os.environ, **env}, timeout=120)
    return result.stdout


def test_token_mints_a_verifiable_token_from_the_configured_secret() -> None:
    secret = "cli-secret-0123456789abcdef0123456789abcdef"
    printed = runnel("token", "--tenant", "acme", "--sub", "ci", "--scopes",
                     "streams:read, streams:write", "--runs", "r1,r2", "--ttl", "60",
                     env={"RUNNEL_JWT_SECRET": secret}).strip()
    principal = verify_token(printed, secret)
    assert principal == Principal("ci", "acme", frozenset({"streams:read", "streams:write"}),
                                  frozenset({"r1", "r2"}), principal.token_id,
                                  principal.expires_at)
    assert principal.expires_at is not None and 0 < principal.expires_at - time.time() <= 60


def test_token_and_serve_agree_on_the_local_secret_without_configuration(tmp_path: Path) -> None:
    """`runnel serve` creates the local secret; `runnel token` only reads it (ADR 0036)."""
    secret = local_jwt_secret(tmp_path)
    env = {"RUNNEL_DATA_DIR": str(tmp_path)}
    printed = runnel("token", "--tenant", "t", "--sub", "s", "--scopes", "streams:read",
                     env=env).strip()
    assert verify_token(printed, secret).tenant == "t"


def test_migrate_applies_the_schema_once(tmp_path: Path) -> None:
    dsn = run_sync(lambda: create_database(prefix="runnel_cli"))
    try:
        env = {"RUNNEL_DATABASE_URL": dsn, "RUNNEL_DATA_DIR": str(tmp_path)}
        first = runnel("migrate", env=env)
        assert first.startswith("applied ")
        assert runnel("migrate", env=env).strip() == "schema is up to date"
    finally:
        run_sync(lambda: drop_database(dsn))


def test_fence_and_unfence_record_the_regions_fence_and_count_its_epochs(
        tmp_path: Path) -> None:
    dsn = run_sync(lambda: create_database(prefix="runnel_cli"))
    try:
        env = {"RUNNEL_DATABASE_URL": dsn, "RUNNEL_DATA_DIR": str(tmp_path)}
        assert runnel("unfence", "us", env=env).strip() == "region us is not fenced"
        assert runnel("fence", "us", env=env).startswith("region us fenced (epoch 1)")
        assert run_sync(lambda: fence_row(dsn, "us")) == (True, 1)
        assert runnel("unfence", "us", env=env).startswith("region us unfenced (epoch 1)")
        assert run_sync(lambda: fence_row(dsn, "us")) == (False, 1)
        assert runnel("fence", "us", env=env).startswith("region us fenced (epoch 2)")
        assert run_sync(lambda: fence_row(dsn, "us")) == (True, 2)
        assert run_sync(lambda: fence_row(dsn, "eu")) is None
        refused = subprocess.run([sys.executable, "-m", "entrypoints.commands", "fence", "no/such"],
                                 capture_output=True, text=True, cwd=REPO, timeout=120,
                                 env={**os.environ, **env})
        assert refused.returncode == 2 and "not a region name" in refused.stderr
    finally:
        run_sync(lambda: drop_database(dsn))


async def fence_row(dsn: str, region: str) -> tuple[bool, int] | None:
    connection = await asyncpg.connect(dsn)
    try:
        row = await connection.fetchrow(
            "SELECT fenced, epoch FROM region_fences WHERE region = $1", region)
    finally:
        await connection.close()
    return (row["fenced"], row["epoch"]) if row is not None else None


def embedded_postgres_running(data_dir: Path) -> bool:
    pgdata = str(data_dir / "pgdata")
    for process in psutil.process_iter(["cmdline"]):
        cmdline = process.info["cmdline"] or []
        if any(pgdata in part for part in cmdline):
            return True
    return False


def test_serve_on_the_embedded_default_prints_a_working_token_and_keeps_data(
        tmp_path: Path) -> None:
    """What `make run` does on a fresh checkout: no database configured."""
    data_dir = tmp_path / "data"
    for attempt in ("first start", "restart"):
        server = RunnelServer.start({"RUNNEL_DATABASE_URL": None, "RUNNEL_STORAGE": None,
                                     "RUNNEL_JWT_SECRET": None}, data_dir, workers=True)
        try:
            assert "embedded Postgres under" in server.banner
            assert f"{server.url}/schema" in server.banner
            assert embedded_postgres_running(data_dir)
            headers = {"Authorization": f"Bearer {_banner_token(server)}"}
            assert httpx.get(server.url + "/readyz").status_code == 200
            if attempt == "first start":
                created = httpx.post(server.api + "/runs/demo/streams", headers=headers,
                                     json={"stream_id": "s", "content_class": "x"})
                assert created.status_code == 201
                appended = httpx.post(server.api + "/runs/demo/streams/s/records",
                                      headers=headers, json={"records": [{"payload": "kept"}]})
                assert appended.status_code == 201
            else:
                page = httpx.get(server.api + "/runs/demo/streams/s/records", headers=headers)
                assert [r["payload"] for r in page.json()["records"]] == ["kept"]
        finally:
            server.stop()
        # Uvicorn shuts down cleanly on SIGTERM, then re-raises it: the exit status says so.
        assert server.process.returncode in (0, -signal.SIGTERM)
        log = server.log.read_text()
        assert "Application shutdown complete" in log, log
        assert not embedded_postgres_running(data_dir)


def _banner_token(server: RunnelServer) -> str:
    match = re.search(r"export RUNNEL_TOKEN=(\S+)", server.banner)
    assert match is not None, server.banner
    return match.group(1)


def test_serve_refuses_the_memory_wait_service_on_postgres(tmp_path: Path) -> None:
    result = subprocess.run([sys.executable, "-m", "entrypoints.commands", "serve", "--port", "0"],
                            capture_output=True, text=True, cwd=REPO, timeout=120,
                            env={**os.environ, "RUNNEL_DATA_DIR": str(tmp_path),
                                 "RUNNEL_STORAGE": "postgres", "RUNNEL_WAIT_SERVICE": "memory"})
    assert result.returncode == 2
    assert "invalid configuration" in result.stderr
    assert "RUNNEL_WAIT_SERVICE=memory needs RUNNEL_STORAGE=memory" in result.stderr
    assert "Traceback" not in result.stderr
    assert list(tmp_path.iterdir()) == []  # refused before anything started


def test_without_auto_migrate_serve_waits_for_runnel_migrate(tmp_path: Path) -> None:
    """RUNNEL_AUTO_MIGRATE=false: migrating is a deploy step; a node refuses a database
    behind its schema instead of changing it, and starts once `runnel migrate` ran."""
    dsn = run_sync(lambda: create_database(prefix="runnel_cli"))
    try:
        env = {"RUNNEL_DATABASE_URL": dsn, "RUNNEL_DATA_DIR": str(tmp_path),
               "RUNNEL_STORAGE": "postgres", "RUNNEL_AUTO_MIGRATE": "false"}
        refused = subprocess.run([sys.executable, "-m", "entrypoints.commands", "serve",
                                  "--port", "0"], capture_output=True, text=True, cwd=REPO,
                                 timeout=120, env={**os.environ, **env})
        assert refused.returncode != 0
        assert "RUNNEL_AUTO_MIGRATE=false: run `runnel migrate` first" in refused.stderr
        assert run_sync(lambda: _ledger_exists(dsn)) is False  # nothing was changed
        assert runnel("migrate", env=env).startswith("applied ")
        server = RunnelServer.start(env, tmp_path / "node")
        try:
            assert httpx.get(server.url + "/readyz").status_code == 200
        finally:
            server.stop()
    finally:
        run_sync(lambda: drop_database(dsn))


async def _ledger_exists(dsn: str) -> bool:
    connection = await asyncpg.connect(dsn)
    try:
        return bool(await connection.fetchval(
            "SELECT to_regclass('runnel_migrations') IS NOT NULL"))
    finally:
        await connection.close()


def test_migrate_refuses_a_database_migrated_by_a_newer_release(tmp_path: Path) -> None:
    dsn = run_sync(lambda: create_database(prefix="runnel_cli"))
    try:
        env = {"RUNNEL_DATABASE_URL": dsn, "RUNNEL_DATA_DIR": str(tmp_path)}
        runnel("migrate", env=env)
        run_sync(lambda: _record(dsn, "9999_from_the_future"))
        result = subprocess.run([sys.executable, "-m", "entrypoints.commands", "migrate"],
                                capture_output=True, text=True, cwd=REPO, timeout=120,
                                env={**os.environ, **env})
        assert result.returncode == 2
        assert "migrated by a newer Runnel" in result.stderr
        assert "Traceback" not in result.stderr
    finally:
        run_sync(lambda: drop_database(dsn))


async def _record(dsn: str, name: str) -> None:
    connection = await asyncpg.connect(dsn)
    try:
        await connection.execute("INSERT INTO runnel_migrations (name) VALUES ($1)", name)
    finally:
        await connection.close()
