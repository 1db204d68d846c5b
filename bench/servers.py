"""Requests/s of the same app under each candidate HTTP server, in one run (ADR 0021).

Prints figures; never passes or fails. Each candidate serves in a process of its own,
one worker on uvloop, on 127.0.0.1; this process is the load (uvloop, raw keep-alive
sockets, one request in flight per connection, so the client costs little and every
candidate gets the same client).

    .venv/bin/python -m bench.servers [--seconds 5] [--connections 32] [--rounds 3]
                                      [--only trivial append]

Candidates: uvicorn + httptools (what `runnel serve` ran before ADR 0021), uvicorn + h11,
uvicorn + the bounded httptools protocol of `entrypoints/http/bounded_protocol.py` (what it
runs now), and granian (ASGI; skipped when not installed: `uv pip install granian`).
Apps: `trivial` answers `ok` to any request; `append` is the Runnel app on
`RUNNEL_STORAGE=memory`, every request a single-record append over HTTP.
The median of the rounds is printed.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import psutil
import uvloop

from bench.rawhttp import (
    constant_app,
    free_port,
    load,
    request,
    send_once,
    server_process,
    wait_listening,
)

ROOT = Path(__file__).resolve().parent.parent

SECRET = "bench-servers-secret-0123456789abcdef0123456789"
CANDIDATES = ("uvicorn-httptools", "uvicorn-h11", "uvicorn-bounded", "granian")
RUN, STREAM = "bench", "s"
ENV = {"RUNNEL_STORAGE": "memory", "RUNNEL_JWT_SECRET": SECRET, "RUNNEL_WORKERS": "false",
       "RUNNEL_MAX_CONNECTIONS_PER_ADDRESS": "10000", "RUNNEL_DATA_DIR": "/tmp/runnel-bench"}


trivial = constant_app(200, b"text/plain", b"ok")


def runnel_app() -> Any:
    from entrypoints.composition.settings import Settings
    from entrypoints.http.app import create_asgi_app

    return create_asgi_app(Settings())


def serve(candidate: str, app_name: str, port: int) -> None:
    """The server side of one measurement (runs in its own process)."""
    if candidate == "granian":
        from granian import Granian
        from granian.constants import Interfaces, Loops

        target = "bench.servers:runnel_app" if app_name == "append" else "bench.servers:trivial"
        Granian(target, address="127.0.0.1", port=port, interface=Interfaces.ASGI, workers=1,
                loop=Loops.uvloop, factory=app_name == "append", log_enabled=False,
                working_dir=ROOT).serve()
        return
    import uvicorn

    from entrypoints.composition.settings import Settings
    from entrypoints.http.bounded_protocol import bounded_protocol
    from entrypoints.http.connections import ConnectionBudget, connection_limits

    app = runnel_app() if app_name == "append" else trivial
    http: Any = {"uvicorn-httptools": "httptools", "uvicorn-h11": "h11"}.get(candidate)
    if http is None:
        http = bounded_protocol(ConnectionBudget(connection_limits(Settings())))
    uvicorn.run(app, host="127.0.0.1", port=port, http=http, loop="uvloop", log_level="warning",
                lifespan="on", access_log=False, ws="none")


def _token() -> str:
    from entrypoints.auth.tokens import mint_token

    return mint_token(SECRET, tenant="bench", sub="bench",
                      scopes=("streams:read", "streams:write"), ttl_seconds=3600)


def _request(app_name: str, auth: str) -> bytes:
    if app_name == "trivial":
        return request("GET", "/")
    body = json.dumps({"records": [{"payload": {"token": "Hel"}}]}).encode()
    return request("POST", f"/api/workflow-streams/runs/{RUN}/streams/{STREAM}/records", body,
                   {"Authorization": f"Bearer {auth}", "Content-Type": "application/json"})


async def _create_stream(port: int, auth: str) -> None:
    body = json.dumps({"stream_id": STREAM, "content_class": "output.text",
                       "credit": {"max_unread_items": 100_000,
                                  "max_total_items": 1_000_000}}).encode()
    status, _ = await send_once(port, request(
        "POST", f"/api/workflow-streams/runs/{RUN}/streams", body,
        {"Authorization": f"Bearer {auth}", "Content-Type": "application/json"}))
    assert status in (200, 201), status


def _cpu_seconds(pid: int) -> float:
    """User and system CPU of the server process and its children (granian's workers)."""
    root = psutil.Process(pid)
    total = 0.0
    for process in [root, *root.children(recursive=True)]:
        times = process.cpu_times()
        total += times.user + times.system
    return total


async def measure(candidate: str, app_name: str, args: argparse.Namespace
                  ) -> tuple[float, float] | None:
    """Requests/s, and the server's CPU milliseconds per request."""
    if candidate == "granian":
        try:
            import granian  # noqa: F401
        except ImportError:
            return None
    port = free_port()
    env = {**os.environ, **ENV}
    with server_process([sys.executable, "-m", "bench.servers", "--serve", candidate,
                         "--app", app_name, "--port", str(port)], signal.SIGINT, 10.0,
                        env=env, cwd=ROOT) as process:
        await wait_listening(port, process)
        auth = _token()
        if app_name == "append":
            await _create_stream(port, auth)
        message = _request(app_name, auth)
        await load(port, lambda _: message, args.connections, 1.0)  # warm up
        cpu = _cpu_seconds(process.pid)
        started = time.perf_counter()
        rate = (await load(port, lambda _: message, args.connections, args.seconds)).rate
        served = rate * (time.perf_counter() - started)
        return rate, (_cpu_seconds(process.pid) - cpu) * 1000 / served


async def main(args: argparse.Namespace) -> None:
    print(f"{args.connections} keep-alive connections, {args.seconds:g} s a round, median of "
          f"{args.rounds} rounds: requests/s [each round], server CPU ms per request")
    for app_name in args.only:
        figures: dict[str, list[tuple[float, float]]] = {candidate: [] for candidate in CANDIDATES}
        for _ in range(args.rounds):
            for candidate in CANDIDATES:
                figure = await measure(candidate, app_name, args)
                if figure is not None:
                    figures[candidate].append(figure)
        for candidate, values in figures.items():
            if not values:
                print(f"  {app_name:8} {candidate:18} not installed")
                continue
            rates = [rate for rate, _ in values]
            rounds = ", ".join(f"{rate:,.0f}" for rate in rates)
            cpu = statistics.median(cost for _, cost in values)
            print(f"  {app_name:8} {candidate:18} {statistics.median(rates):>9,.0f}  [{rounds}]"
                  f"  {cpu:.3f} ms CPU")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--connections", type=int, default=32)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--only", nargs="+", choices=("trivial", "append"),
                        default=["trivial", "append"])
    parser.add_argument("--serve", choices=CANDIDATES, help=argparse.SUPPRESS)
    parser.add_argument("--app", choices=("trivial", "append"), help=argparse.SUPPRESS)
    parser.add_argument("--port", type=int, help=argparse.SUPPRESS)
    parsed = parser.parse_args()
    if parsed.serve:
        serve(parsed.serve, parsed.app, parsed.port)
    else:
        uvloop.run(main(parsed))
