"""A real Runnel server process for black-box tests: `runnel serve` (uvicorn) on a free port.

The process is started exactly as a user starts it (the CLI, settings from
`RUNNEL_*` variables); the port is chosen by the OS (`--port 0`) and read
from the banner (with `RUNNEL_LOG_FORMAT=json`, from its one JSON line in the
log: stdout is no terminal), so parallel runs never race for a port. `stop()`
sends SIGTERM to that one process and waits for it; what it wrote to stdout is
kept in `stdout_lines`.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import IO

import httpx

from entrypoints.auth.tokens import mint_token

SECRET = "http-tests-secret-0123456789abcdef0123456789"
METRICS_TOKEN = "http-tests-metrics-token-0123456789abcdef"
"""What every test server's /metrics asks for (ADR 0061)."""
METRICS = {"Authorization": f"Bearer {METRICS_TOKEN}"}
STARTUP_LINES = 200
API = "/api/workflow-streams"
BANNER_START = "Runnel listening on "
START_SECONDS = 120.0


class RunnelServer:
    def __init__(self, process: subprocess.Popen[str], banner: str, log: Path) -> None:
        self.process = process
        self.banner = banner
        self.url = banner.splitlines()[0].removeprefix(BANNER_START).strip()
        self.api = self.url + API
        self.log = log
        self.stdout_lines: list[str] = []

    @classmethod
    def start(cls, env: Mapping[str, str | None], data_dir: Path, workers: bool = False,
              extra_args: tuple[str, ...] = ()) -> RunnelServer:
        """Start `runnel serve`; `env` adds variables (None removes one)."""
        data_dir.mkdir(parents=True, exist_ok=True)
        log = data_dir / "server.log"
        # One process unless a test asks for more: tests kill, signal and count the process.
        merged = {**os.environ, "RUNNEL_JWT_SECRET": SECRET, "RUNNEL_DATA_DIR": str(data_dir),
                  "RUNNEL_PROCESSES": "1", "RUNNEL_METRICS_TOKEN": METRICS_TOKEN, **env}
        environment = {key: value for key, value in merged.items() if value is not None}
        args = [sys.executable, "-m", "entrypoints.commands", "serve", "--port", "0", *extra_args]
        if not workers:
            args.append("--no-workers")
        with log.open("w") as stderr:
            process = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=stderr, text=True,
                                       env=environment, cwd=Path(__file__).parents[2])
        assert process.stdout is not None
        if environment.get("RUNNEL_LOG_FORMAT") == "json":
            banner = _read_logged_banner(log, process)
        else:
            banner = _read_banner(process.stdout)
        if banner is None:
            process.kill()
            process.wait()
            raise RuntimeError(f"server did not start:\n{log.read_text()}")
        server = cls(process, banner, log)
        threading.Thread(target=_drain, args=(process.stdout, server.stdout_lines),
                         daemon=True).start()
        assert httpx.get(server.url + "/healthz").status_code == 200
        return server

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


def _read_banner(stdout: IO[str]) -> str | None:
    """The banner `runnel serve` prints once it listens: from its first line to `  curl …`."""
    lines: list[str] = []
    for _ in range(STARTUP_LINES):
        line = stdout.readline()
        if not line:
            return None
        if line.startswith(BANNER_START) or lines:
            lines.append(line)
        if lines and line.startswith("  curl "):
            return "".join(lines)
    return None


def _read_logged_banner(log: Path, process: subprocess.Popen[str]) -> str | None:
    """The first line of the banner, from the JSON line that logs it."""
    deadline = time.monotonic() + START_SECONDS
    while time.monotonic() < deadline and process.poll() is None:
        for line in log.read_text().splitlines():
            message = json.loads(line).get("message", "") if line.startswith("{") else ""
            if message.startswith(BANNER_START):
                return message.split(";")[0] + "\n"
        time.sleep(0.1)
    return None


def _drain(stdout: IO[str], lines: list[str]) -> None:
    for line in stdout:
        lines.append(line)


@contextmanager
def running_server(env: Mapping[str, str | None], data_dir: Path, workers: bool = False,
                   extra_args: tuple[str, ...] = ()) -> Iterator[RunnelServer]:
    server = RunnelServer.start(env, data_dir, workers, extra_args)
    try:
        yield server
    finally:
        server.stop()


def token(tenant: str = "t1", sub: str = "alice",
          scopes: tuple[str, ...] = ("streams:read", "streams:write"),
          runs: tuple[str, ...] | None = None, ttl: int = 3600, secret: str = SECRET) -> str:
    return mint_token(secret, tenant=tenant, sub=sub, scopes=scopes, runs=runs, ttl_seconds=ttl)


def bearer(value: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {value}"}
