"""Appends over HTTP beside the echo floor of the same server stack, in one run (ADR 0045, 0049).

Prints figures; never passes or fails. Starts, in processes of their own:
- the **echo floor**: a trivial Litestar handler that reads the body and answers a constant
  201 JSON, served exactly as `runnel serve` serves (uvicorn, the bounded httptools protocol
  of ADR 0021, uvloop, one process); a plain-ASGI echo on the same stack is printed too, as
  the floor of the server itself;
- `runnel serve` with its default settings (the workers on; `--no-workers` leaves them out)
  on a throwaway database it creates and drops on the server of `RUNNEL_BENCH_PG_DSN`
  (admin DSN, default `postgresql://postgres@127.0.0.1:5432/postgres`).

This process is the load: `bench/rawhttp.py`, one request in flight per connection.
Scenarios (fresh streams every round, so credit never binds): single-record appends at 1
and 16 connections on one hot stream, 16 connections on 16 streams, and batches of 100
records at 8 connections on 8 streams. Each figure is the median of the rounds: p50/p99
latency, the server's CPU time per request (from `/proc`), and single appends as a ratio
of the floor, by throughput and by CPU per request (the floor's CPU per request over
theirs: what the ratio would be if both were CPU-bound). Under each figure, the box's CPU
per request split into the server's, this client's and the rest (Postgres, on a quiet
box), and the box ceiling: the rate with every core busy at those costs. After the
scenarios, **rows alone** stores batches of 100 rows in the same records table straight
from 8 connections, with no HTTP server: Postgres's own cost of a batch, the floor under
any server's.

    .venv/bin/python -m bench.http [--seconds 5] [--rounds 3] [--processes 1,2] [--peers]
                                   [--no-workers] [--compare CHECKOUT]

`--compare CHECKOUT` also runs the scenarios against `runnel serve` of another checkout (its
own `.venv`), such as the main branch's, as a same-run baseline for a change.
`--peers` (`make bench-peers`) also runs the same client against the Durable Streams
reference server (`@durable-streams/server` from npm, file-backed, installed into a temp dir
on demand; skipped with a message when `node` is missing): single JSON messages at 16
connections on 16 streams, and JSON arrays of 100 messages at 8 connections on 8 streams.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import asyncpg
import uvloop

from bench.rawhttp import (
    Figure,
    ServerCpu,
    constant_app,
    figure_of,
    free_port,
    load,
    measured,
    request,
    send_once,
    server_process,
    wait_listening,
)
from bench.scratch import create_database, drop_database, dsn_for

ROOT = Path(__file__).resolve().parent.parent
SECRET = "bench-http-secret-0123456789abcdef0123456789abcdef"
RECORDS = "/api/workflow-streams/runs/{run}/streams/{stream}/records"
ECHO_BODY = b'{"appended":[{"seq":1}],"head":1}'


def litestar_echo() -> Any:
    from litestar import Litestar, Request, post

    @post("/{path:path}", status_code=201)
    async def echo(request: Request[Any, Any, Any]) -> Any:
        await request.body()
        return json.loads(ECHO_BODY)

    return Litestar([echo], openapi_config=None)


asgi_echo = constant_app(201, b"application/json", ECHO_BODY)


def serve_echo(kind: str, port: int) -> None:
    """The echo side (its own process), on the stack `runnel serve` runs."""
    import uvicorn

    from entrypoints.composition.settings import Settings
    from entrypoints.http.bounded_protocol import bounded_protocol
    from entrypoints.http.connections import ConnectionBudget, connection_limits

    app = litestar_echo() if kind == "litestar" else asgi_echo
    http = bounded_protocol(ConnectionBudget(connection_limits(Settings())))
    uvicorn.run(app, host="127.0.0.1", port=port, http=http, loop="uvloop", log_level="warning",
                lifespan="on", access_log=False, ws="none")


ENV = {"RUNNEL_JWT_SECRET": SECRET, "RUNNEL_MAX_CONNECTIONS_PER_ADDRESS": "10000",
       "RUNNEL_DATA_DIR": "/tmp/runnel-bench-http", "RUNNEL_LOG_LEVEL": "WARNING"}


@contextmanager
def process(args: list[str], env: dict[str, str], root: Path = ROOT
            ) -> Iterator[subprocess.Popen[bytes]]:
    with server_process(args, env={**os.environ, **ENV, **env}, cwd=root,
                        stdout=subprocess.DEVNULL) as child:
        yield child


def _token() -> str:
    from entrypoints.auth.tokens import mint_token

    return mint_token(SECRET, tenant="bench", sub="bench",
                      scopes=("streams:read", "streams:write"), ttl_seconds=3600)


class Runnel:
    """Request bytes for one running `runnel serve`."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.headers = {"Authorization": f"Bearer {_token()}",
                        "Content-Type": "application/json"}

    async def create(self, run: str, stream: str) -> None:
        body = json.dumps({"stream_id": stream, "content_class": "output.text",
                           "credit": {"max_unread_items": 100_000,
                                      "max_total_items": 1_000_000}}).encode()
        status, answer = await send_once(self.port, request(
            "POST", f"/api/workflow-streams/runs/{run}/streams", body, self.headers))
        if status not in (200, 201):
            raise RuntimeError(f"create answered {status}: {answer[:300]!r}")

    def append(self, run: str, stream: str, records: int) -> bytes:
        body = json.dumps({"records": [{"payload": {"token": "Hel"}}] * records}).encode()
        return request("POST", RECORDS.format(run=run, stream=stream), body, self.headers)


async def scenario(runnel: Runnel, connections: int, streams: int, records: int,
                   seconds: float, cpu: ServerCpu | None = None) -> Figure:
    run = f"r-{uuid.uuid4().hex[:10]}"
    names = [f"s{index}" for index in range(streams)]
    for name in names:
        await runnel.create(run, name)
    messages = [runnel.append(run, name, records) for name in names]
    return await measured(cpu, load(runnel.port, lambda index: messages[index % streams],
                                    connections, seconds))


def _median(figures: list[Figure]) -> Figure:
    return Figure(*(statistics.median(getattr(f, name) for f in figures)
                    for name in ("rate", "p50_ms", "p99_ms", "cpu_us", "client_us", "box_us")))


ROWS_ALONE = """
    INSERT INTO records (stream, sequence, content_type, appended_at, size, payload,
                         byte_offset)
    SELECT $1, n, 'application/json', now(), 15, '{"token":"Hel"}', 15 * n
    FROM generate_series($2::int8, $2 + $3 - 1) AS n"""


async def rows_alone(database: str, connections: int, records: int, seconds: float
                     ) -> Figure:
    """Postgres with no HTTP server: each connection inserts `records` rows into the
    records table (the schema `runnel serve` migrated) per autocommit statement, in a
    loop: what storing the rows costs the box before any server work."""
    opened = [await asyncpg.connect(dsn_for(database)) for _ in range(connections)]
    latencies: list[float] = []
    stop = time.perf_counter() + seconds

    async def one(connection: asyncpg.Connection) -> None:
        stream, first = uuid.uuid4(), 1
        while time.perf_counter() < stop:
            sent = time.perf_counter()
            await connection.execute(ROWS_ALONE, stream, first, records)
            latencies.append(time.perf_counter() - sent)
            first += records

    async def run() -> Figure:
        started = time.perf_counter()
        await asyncio.gather(*(one(connection) for connection in opened))
        return figure_of(latencies, time.perf_counter() - started)

    try:
        return await measured(None, run())
    finally:
        for connection in opened:
            await connection.close()


async def echo_floor(kind: str, connections: int, seconds: float, rounds: int) -> Figure:
    port = free_port()
    body = json.dumps({"records": [{"payload": {"token": "Hel"}}]}).encode()
    message = request("POST", RECORDS.format(run="r", stream="s"), body,
                      {"Content-Type": "application/json"})
    command = [sys.executable, "-m", "bench.http", "--serve-echo", kind, "--port", str(port)]
    with process(command, {}) as child:
        await wait_listening(port, child)
        await load(port, lambda _: message, connections, 1.0)  # warm up
        cpu = ServerCpu(child.pid)
        return _median([await measured(cpu, load(port, lambda _: message, connections, seconds))
                        for _ in range(rounds)])


ROWS_LABEL = "rows alone, 100 a statement, 8 conns"
"""Postgres storing a batch's rows with no server (`rows_alone`), after the scenarios."""

SCENARIOS: list[tuple[str, int, int, int]] = [
    # label, connections, streams, records per request
    ("single, 1 conn, 1 stream", 1, 1, 1),
    ("single, 16 conns, 1 hot stream", 16, 1, 1),
    ("single, 16 conns, 16 streams", 16, 16, 1),
    ("batch of 100, 8 conns, 8 streams", 8, 8, 100),
]


async def runnel_figures(args: argparse.Namespace, processes: int, root: Path = ROOT
                         ) -> dict[str, Figure]:
    """The scenarios against `runnel serve` of the checkout at `root` (its own venv's)."""
    database = await create_database("runnel_bench_http")
    port = free_port()
    python = sys.executable if root == ROOT else str(root / ".venv" / "bin" / "python")
    try:
        workers = ["--no-workers"] if args.no_workers else []
        with process([python, "-m", "entrypoints.commands", "serve", "--port", str(port),
                      *workers, "--processes", str(processes)],
                     {"RUNNEL_DATABASE_URL": dsn_for(database)}, root) as child:
            await wait_listening(port, child)
            runnel = Runnel(port)
            cpu = ServerCpu(child.pid)
            await scenario(runnel, 16, 16, 1, 1.0)  # warm up
            results: dict[str, list[Figure]] = {label: [] for label, *_ in SCENARIOS}
            for _ in range(args.rounds):
                for label, connections, streams, records in SCENARIOS:
                    results[label].append(await scenario(runnel, connections, streams,
                                                         records, args.seconds, cpu))
            figures = {label: _median(figures) for label, figures in results.items()}
        figures[ROWS_LABEL] = _median([await rows_alone(database, 8, 100, args.seconds)
                                       for _ in range(args.rounds)])
        return figures
    finally:
        await drop_database(database)


PEER_PACKAGE = "@durable-streams/server@0.3.7"
PEER_SERVER = """
const { DurableStreamTestServer } = require(process.argv[1]);
new DurableStreamTestServer({ host: "127.0.0.1", port: Number(process.argv[2]),
                              dataDir: process.argv[3] }).start();
"""


async def peer_figures(args: argparse.Namespace) -> dict[str, Figure] | str:
    """The Durable Streams reference server under the same client, or why it did not run."""
    if shutil.which("node") is None or shutil.which("npm") is None:
        return "skipped: node and npm are needed for the Durable Streams reference server"
    with tempfile.TemporaryDirectory(prefix="runnel-bench-peer-") as folder:
        installed = subprocess.run(["npm", "install", "--silent", "--prefix", folder,
                                    PEER_PACKAGE], capture_output=True, text=True)
        if installed.returncode != 0:
            return f"skipped: npm install {PEER_PACKAGE} failed: {installed.stderr[-300:]}"
        module = str(Path(folder) / "node_modules" / "@durable-streams" / "server")
        port = free_port()
        data = Path(folder) / "data"
        data.mkdir()
        with process(["node", "-e", PEER_SERVER, module, str(port), str(data)], {}) as child:
            await wait_listening(port, child)
            cpu = ServerCpu(child.pid)
            json_type = {"Content-Type": "application/json"}
            results: dict[str, list[Figure]] = {"single": [], "batch": []}
            for round_number in range(args.rounds + 1):  # the first round warms up
                for label, connections, records in (("single", 16, 1), ("batch", 8, 100)):
                    paths = [f"/v1/stream/r{round_number}-{label}-{index}"
                             for index in range(connections)]
                    for path in paths:
                        status, answer = await send_once(port, request("PUT", path, b"",
                                                                       json_type))
                        if status not in (200, 201):
                            raise RuntimeError(f"peer create answered {status}: {answer!r}")
                    body = json.dumps([{"token": "Hel"}] * records).encode()
                    messages = [request("POST", path, body, json_type) for path in paths]
                    figure = await measured(cpu, load(
                        port, lambda index, messages=messages: messages[index], connections,
                        1.0 if round_number == 0 else args.seconds))
                    if round_number:
                        results[label].append(figure)
            return {label: _median(figures) for label, figures in results.items()}


def _line(label: str, figure: Figure, records: int, ratio: Callable[[Figure], str]) -> str:
    cpu = f"  cpu {figure.cpu_us:6.0f} us/req" if figure.cpu_us else ""
    return (f"  {label:36} {figure.rate:>9,.0f} req/s {figure.rate * records:>10,.0f} rec/s"
            f"   p50 {figure.p50_ms:6.2f} ms  p99 {figure.p99_ms:7.2f} ms{cpu}  {ratio(figure)}")


def _split(figure: Figure, records: int) -> str:
    """Where the box's CPU per request went, and the rate it could carry at most."""
    return (f"  {'':36} box cpu {figure.box_us:6.0f} us/req = server {figure.cpu_us:.0f}"
            f" + client {figure.client_us:.0f} + rest (Postgres) {figure.rest_us:.0f};"
            f" box ceiling {figure.ceiling * records:,.0f} rec/s")


async def main(args: argparse.Namespace) -> None:
    print(f"{args.seconds:g} s a round, median of {args.rounds} rounds, "
          f"{os.cpu_count()} cores; one request in flight per keep-alive connection")
    floor = await echo_floor("litestar", 16, args.seconds, args.rounds)
    plain = await echo_floor("asgi", 16, args.seconds, args.rounds)
    print(_line("echo floor (Litestar), 16 conns", floor, 1, lambda _: "1.00x floor"))
    print(_line("plain ASGI echo, 16 conns", plain, 1,
                lambda figure: f"{figure.rate / floor.rate:.2f}x floor"))
    batch_rates: list[float] = []
    runs = [(processes, ROOT) for processes in args.processes]
    runs += [(processes, args.compare) for processes in args.processes if args.compare]
    for processes, root in runs:
        figures = await runnel_figures(args, processes, root)
        if root == ROOT:
            batch_rates.append(figures["batch of 100, 8 conns, 8 streams"].rate * 100)
        workers = " --no-workers" if args.no_workers else ""
        where = "" if root == ROOT else f" of {root}"
        print(f"  runnel serve --processes {processes}{workers}{where}:")
        for label, _, _, records in SCENARIOS:
            print(_line(label, figures[label], records,
                        lambda figure, records=records: "" if records > 1
                        else f"{figure.rate / floor.rate:.2f}x floor"
                             f" (by cpu {floor.cpu_us / max(figure.cpu_us, 1e-9):.2f}x)"))
            print(_split(figures[label], records))
        rows = figures[ROWS_LABEL]
        print(_line(ROWS_LABEL, rows, 100, lambda _: ""))
        print(_split(rows, 100))
    if not args.peers:
        return
    peers = await peer_figures(args)
    if isinstance(peers, str):
        print(f"  Durable Streams reference server: {peers}")
        return
    ours = max(batch_rates)
    print(_line("DS reference, single, 16 conns, 16 st", peers["single"], 1,
                lambda figure: f"{figure.rate / floor.rate:.2f}x floor"))
    print(_split(peers["single"], 1))
    print(_line("DS reference, batch of 100, 8 conns", peers["batch"], 100,
                lambda figure: f"Runnel batches: {ours / (figure.rate * 100):.2f}x this"))
    print(_split(peers["batch"], 100))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--processes", type=lambda text: [int(n) for n in text.split(",")],
                        default=[1, 2], help="`runnel serve --processes` values to measure")
    parser.add_argument("--peers", action="store_true",
                        help="also measure the Durable Streams reference server")
    parser.add_argument("--no-workers", action="store_true",
                        help="serve without the background workers (`runnel serve --no-workers`)")
    parser.add_argument("--compare", type=Path, metavar="CHECKOUT",
                        help="also measure `runnel serve` of another checkout (with its .venv), "
                             "e.g. the main branch's, as a same-run baseline")
    parser.add_argument("--serve-echo", choices=("litestar", "asgi"), help=argparse.SUPPRESS)
    parser.add_argument("--port", type=int, help=argparse.SUPPRESS)
    parsed = parser.parse_args()
    if parsed.serve_echo:
        serve_echo(parsed.serve_echo, parsed.port)
    else:
        uvloop.run(main(parsed))
