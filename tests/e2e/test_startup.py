"""Start-up as an operator meets it: a database that comes up late is waited for, one
that never does is one line and exit 2, a misspelt variable is a warning, production
refuses the laptop defaults, and `runnel config` says where each value came from."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx

from tests.http.server import RunnelServer
from tests.integration.blackhole_proxy import ProxyThread
from tests.pg import pg_dsn, pg_template  # noqa: F401  (fixtures)

REPO = Path(__file__).parents[2]


def _runnel(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    clean = {key: value for key, value in os.environ.items() if not key.startswith("RUNNEL_")}
    return subprocess.run([sys.executable, "-m", "entrypoints.commands", *args],
                          capture_output=True, text=True, cwd=REPO, timeout=120,
                          env={**clean, **env})


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_a_database_that_never_answers_is_one_line_and_exit_2(tmp_path: Path) -> None:
    result = _runnel("serve", "--port", "0", env={
        "RUNNEL_DATABASE_URL": f"postgresql://postgres@127.0.0.1:{_closed_port()}/x",
        "RUNNEL_STARTUP_TIMEOUT_SECONDS": "1", "RUNNEL_DATA_DIR": str(tmp_path),
        "RUNNEL_JWT_SECRET": "startup-secret-0123456789abcdef0123"})
    assert result.returncode == 2
    refusal = [line for line in result.stderr.splitlines() if line.startswith("runnel serve:")]
    assert refusal == [refusal[0]] and "did not answer within 1 s" in refusal[0]
    assert "Traceback" not in result.stderr


def test_a_database_that_comes_up_late_is_waited_for(pg_dsn: str, tmp_path: Path) -> None:  # noqa: F811
    proxy = ProxyThread(pg_dsn)
    try:
        routed = proxy.start()
        proxy.refuse()
        threading.Thread(target=_admit_once_retried, args=(proxy, tmp_path / "server.log"),
                         daemon=True).start()
        server = RunnelServer.start({"RUNNEL_DATABASE_URL": routed, "RUNNEL_STORAGE": "postgres",
                                     "RUNNEL_STARTUP_TIMEOUT_SECONDS": "60"}, tmp_path)
        try:
            assert httpx.get(server.url + "/readyz").status_code == 200
            assert "does not answer yet" in server.log.read_text()
        finally:
            server.stop()
    finally:
        proxy.close()


def _admit_once_retried(proxy: ProxyThread, log: Path) -> None:
    """Let the database answer once the node has said it is waiting for it."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if log.exists() and "does not answer yet" in log.read_text():
            break
        time.sleep(0.1)
    proxy.admit()


def test_a_misspelt_variable_is_a_warning_that_names_the_setting(tmp_path: Path) -> None:
    result = _runnel("config", env={"RUNNEL_DATABSE_URL": "postgresql://db/x",
                                    "RUNNEL_DATA_DIR": str(tmp_path)})
    assert result.returncode == 0
    assert ("warning: unknown setting RUNNEL_DATABSE_URL is ignored (did you mean "
            "RUNNEL_DATABASE_URL?)") in result.stderr


def test_production_refuses_the_embedded_default_and_the_local_secret(tmp_path: Path) -> None:
    result = _runnel("serve", "--port", "0", env={"RUNNEL_ENV": "production",
                                                  "RUNNEL_DATA_DIR": str(tmp_path)})
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [
        "runnel serve: invalid configuration: RUNNEL_ENV=production needs RUNNEL_DATABASE_URL "
        "and RUNNEL_JWT_SECRET set explicitly"]
    assert list(tmp_path.iterdir()) == []


def test_config_lists_every_setting_with_its_source_and_hides_secrets(tmp_path: Path) -> None:
    secret = "config-secret-0123456789abcdef0123456"
    dsn = "postgresql://runnel:db-pass-w0rd@db1:5432,db2:5432/runnel?target_session_attrs=any"
    result = _runnel("config", env={"RUNNEL_JWT_SECRET": secret, "RUNNEL_REGION": "eu",
                                    "RUNNEL_DATA_DIR": str(tmp_path),
                                    "RUNNEL_DATABASE_URL": dsn,
                                    "RUNNEL_LISTEN_DATABASE_URL": "postgres://u:p%40ss@h/d"})
    assert result.returncode == 0 and secret not in result.stdout
    assert "db-pass-w0rd" not in result.stdout and "p%40ss" not in result.stdout
    rows_of = {line.split()[0]: line.split() for line in result.stdout.splitlines()[1:]}
    assert rows_of["RUNNEL_DATABASE_URL"][1] == (
        "postgresql://runnel:********@db1:5432,db2:5432/runnel?target_session_attrs=any")
    assert rows_of["RUNNEL_LISTEN_DATABASE_URL"][1] == "postgres://u:********@h/d"
    rows = {line.split()[0]: line.split() for line in result.stdout.splitlines()[1:]}
    assert rows["RUNNEL_REGION"] == ["RUNNEL_REGION", "eu", "local", "environment"]
    assert rows["RUNNEL_JWT_SECRET"] == ["RUNNEL_JWT_SECRET", "********", "-", "environment"]
    assert rows["RUNNEL_DB_STATEMENT_TIMEOUT_SECONDS"][1:] == ["15.0", "15.0", "default"]
    from entrypoints.composition.settings import Settings
    assert len(rows) == len(Settings.model_fields)
