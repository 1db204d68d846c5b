"""The Durable Streams facade beside the native API, in one run over one real `runnel serve`
on Postgres (ADR 0041, 0071). Prints figures and facade/native ratios; never passes or fails.

(a) Append -> SSE: `--readers` SSE subscribers of one stream, `--producers` keep-alive producer
    connections offering `--rate` appends/s for `--duration` s; the latency from just before
    an append is sent to the moment a timed subscriber has the event that holds it (p50/p99),
    and the sustained rate (appends answered / time until the last answer). Native readers
    follow `…/subscribe`; facade readers `GET /v1/stream/{path}?offset=-1&live=sse`.
(b) Single appends/s: `--producers` connections, each appending one small record at a time
    to a stream of its own, for `--seconds` s (`bench.rawhttp.load`).

Each figure is taken for the native API, then the facade, `--rounds` times, alternating, on
the same server; the median of the rounds is printed. The clients are the raw sockets of
`bench.rawhttp` and a minimal SSE reader here (no HTTP library in the hot loop), the same for
both faces.

    .venv/bin/python -m bench.facade [--duration 8] [--rate 1000] [--readers 100]
                                     [--producers 16] [--seconds 8] [--rounds 1]
                                     [--only latency appends]

The Postgres server comes from `RUNNEL_TEST_PG_DSN` (admin DSN).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.rawhttp import Figure, ServerCpu, exchange, load, measured, request, send_once
from tests.http.server import API, RunnelServer, token
from tests.pg import create_database, drop_database

TENANT = "bench"
FACADE = "/v1/stream/"
CREDIT = {"max_unread_items": 1_000_000, "max_unread_bytes": 256 * 2**20,
          "max_total_items": 10_000_000}
TIMED_READERS = 10
"""Readers that parse every event for its timestamps; the others only count."""
WARMUP_SECONDS = 1.0


@dataclass(frozen=True)
class Face:
    """How one face creates a stream, appends to it and follows it."""

    name: str
    create: Callable[[str], bytes]
    append: Callable[[str, float, int], bytes]
    follow: Callable[[str], str]
    ok: int


def _auth() -> dict[str, str]:
    return {"Authorization": f"Bearer {token(tenant=TENANT, sub='bench')}"}


def _native() -> Face:
    def create(run: str) -> bytes:
        body = json.dumps({"stream_id": "s", "content_class": "bench",
                           "credit": CREDIT}).encode()
        return request("POST", f"{API}/runs/{run}/streams", body,
                       {**_auth(), "Content-Type": "application/json"})

    def append(run: str, sent: float, n: int) -> bytes:
        body = json.dumps({"records": [{"payload": {"t": sent, "n": n}}]}).encode()
        return request("POST", f"{API}/runs/{run}/streams/s/records", body,
                       {**_auth(), "Content-Type": "application/json"})

    return Face("native", create, append, lambda run: f"{API}/runs/{run}/streams/s/subscribe",
                201)


def _facade() -> Face:
    def create(path: str) -> bytes:
        return request("PUT", FACADE + path, b"", {
            **_auth(), "Content-Type": "application/json",
            "Runnel-Definition": json.dumps({"credit": CREDIT})})

    def append(path: str, sent: float, n: int) -> bytes:
        body = json.dumps({"t": sent, "n": n}).encode()
        return request("POST", FACADE + path, body,
                       {**_auth(), "Content-Type": "application/json"})

    return Face("facade", create, append,
                lambda path: f"{FACADE}{path}?offset=-1&live=sse", 204)


class Reader(asyncio.Protocol):
    """One SSE subscriber: counts the records it was sent (native: `id:` frames; facade: the
    messages of `event: data`, read from the control event's next offset) and, when timed,
    notes each record's latency from the timestamp in its payload."""

    def __init__(self, face: str, target: str, samples: list[tuple[float, float]] | None) -> None:
        self._face = face
        self._request = (f"GET {target} HTTP/1.1\r\nHost: bench\r\n"
                         + "".join(f"{k}: {v}\r\n" for k, v in _auth().items())
                         + "\r\n").encode()
        self._samples = samples
        self._tail = b""
        self.opened: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self.last = 0
        self.transport: asyncio.Transport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]
        transport.write(self._request)  # type: ignore[attr-defined]

    def data_received(self, data: bytes) -> None:
        now = time.perf_counter()
        text = (self._tail + data).replace(b"\r\n", b"\n")
        if not self.opened.done():
            if b"\n\n" not in text:
                self._tail = text
                return
            head, text = text.split(b"\n\n", 1)
            if not head.startswith(b"HTTP/1.1 200"):
                self.opened.set_exception(RuntimeError(head.decode(errors="replace")))
                return
            self.opened.set_result(None)
        # Chunk-size lines of the chunked body are lines of their own; they never start
        # with `id:`, `event:` or `data:`, so the scan below skips them.
        events = text.split(b"\n\n")
        self._tail = events.pop()
        for event in events:
            self._event(event, now)

    def _event(self, event: bytes, now: float) -> None:
        lines = event.split(b"\n")
        if self._face == "native":
            for line in lines:
                if line.startswith(b"id: "):
                    self.last = int(line[4:])
                elif (line.startswith(b"data: ") and self._samples is not None
                      and b'"t":' in line):
                    self._note(json.loads(line[6:])["payload"]["t"], now)
            return
        kind = next((line for line in lines if line.startswith(b"event:")), b"")
        data = b"\n".join(line[5:] for line in lines if line.startswith(b"data:"))
        if kind == b"event: control":
            self.last = int(json.loads(data)["streamNextOffset"].split("_")[0])
        elif kind == b"event: data" and self._samples is not None:
            for message in json.loads(data):
                self._note(message["t"], now)

    def _note(self, sent: float, now: float) -> None:
        assert self._samples is not None
        self._samples.append((now, (now - sent) * 1000))


@dataclass(frozen=True)
class Latency:
    p50_ms: float
    p99_ms: float
    rate: float
    complete: bool
    cpu_us: float
    """Server CPU per append, its fan-out to every reader included."""


def percentile(samples: list[float], fraction: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(len(ordered) * fraction))] if ordered else 0.0


async def latency(port: int, face: Face, name: str, cpu: ServerCpu,
                  args: argparse.Namespace) -> Latency:
    status, body = await send_once(port, face.create(name))
    assert status in (200, 201), (status, body)
    samples: list[tuple[float, float]] = []
    loop = asyncio.get_running_loop()
    readers: list[Reader] = []
    for n in range(args.readers):
        _, reader = await loop.create_connection(
            lambda n=n: Reader(face.name, face.follow(name),  # type: ignore[misc]
                               samples if n < TIMED_READERS else None), "127.0.0.1", port)
        await reader.opened
        readers.append(reader)
    free: asyncio.Queue[tuple[asyncio.StreamReader, asyncio.StreamWriter]] = asyncio.Queue()
    for _ in range(args.producers):
        free.put_nowait(await asyncio.open_connection("127.0.0.1", port))
    warm_until = time.perf_counter() + WARMUP_SECONDS

    async def one(n: int) -> None:
        connection = await free.get()
        try:
            sent = time.perf_counter()
            status, answer = await exchange(*connection, face.append(name, sent, n))
            assert status == face.ok, (status, answer[:200])
        finally:
            free.put_nowait(connection)

    total = int(args.duration * args.rate)
    cpu_before = cpu.seconds()
    start = time.perf_counter()
    pending = []
    for n in range(total):
        delay = start + n / args.rate - time.perf_counter()
        if delay > 0:
            await asyncio.sleep(delay)
        pending.append(asyncio.create_task(one(n)))
    await asyncio.gather(*pending)
    answered = time.perf_counter() - start
    deadline = time.perf_counter() + 60
    while any(reader.last < total for reader in readers) and time.perf_counter() < deadline:
        await asyncio.sleep(0.05)
    complete = all(reader.last == total for reader in readers)
    cpu_us = 1e6 * (cpu.seconds() - cpu_before) / total
    for reader in readers:
        if reader.transport is not None:
            reader.transport.close()
    while not free.empty():
        free.get_nowait()[1].close()
    measured = [ms for received, ms in samples if received > warm_until]
    return Latency(statistics.median(measured) if measured else 0.0,
                   percentile(measured, 0.99), total / answered, complete, cpu_us)


async def appends(port: int, face: Face, tag: str, cpu: ServerCpu,
                  args: argparse.Namespace) -> Figure:
    names = [f"{tag}-{n}" for n in range(args.producers)]
    for name in names:
        status, body = await send_once(port, face.create(name))
        assert status in (200, 201), (status, body)
    return await measured(cpu, load(port, lambda i: face.append(names[i], 0.0, i),
                                    args.producers, args.seconds))


def _ratio(facade: float, native: float) -> str:
    return f"{facade / native:.2f}x" if native else "n/a"


async def main(args: argparse.Namespace) -> None:
    dsn = await create_database(prefix="runnel_bench")
    data_dir = Path(tempfile.mkdtemp(prefix="runnel-bench-facade-"))
    caps = {"RUNNEL_MAX_CONNECTIONS": "100000", "RUNNEL_MAX_CONNECTIONS_PER_ADDRESS": "100000",
            "RUNNEL_MAX_SSE_CONNECTIONS": "100000",
            "RUNNEL_MAX_SUBSCRIPTIONS_PER_PRINCIPAL": "100000"}
    server = RunnelServer.start({"RUNNEL_DATABASE_URL": dsn, **caps}, data_dir)
    port = urlsplit(server.url).port
    assert port is not None
    faces = (_native(), _facade())
    try:
        print(f"server pid {server.process.pid}, Postgres; {args.rounds} round(s), native "
              f"then facade each round; medians")
        if "latency" in args.only:
            cpu = ServerCpu(server.process.pid)
            figures: dict[str, list[Latency]] = {face.name: [] for face in faces}
            for round_ in range(args.rounds):
                for face in faces:
                    figures[face.name].append(
                        await latency(port, face, f"lat-{face.name}-{round_}", cpu, args))
            print(f"(a) append -> SSE, {args.readers} subscribers, {args.producers} producer "
                  f"connections, {args.rate}/s offered for {args.duration:g} s")
            median = {name: Latency(statistics.median(f.p50_ms for f in values),
                                    statistics.median(f.p99_ms for f in values),
                                    statistics.median(f.rate for f in values),
                                    all(f.complete for f in values),
                                    statistics.median(f.cpu_us for f in values))
                      for name, values in figures.items()}
            for name, figure in median.items():
                print(f"    {name:6}  sustained {figure.rate:7.0f} appends/s   p50 "
                      f"{figure.p50_ms:7.1f} ms   p99 {figure.p99_ms:7.1f} ms   "
                      f"{figure.cpu_us:6.0f} us server CPU per append; every reader got every "
                      f"record: {figure.complete}")
            native, facade = median["native"], median["facade"]
            print(f"    facade/native: rate {_ratio(facade.rate, native.rate)}, p99 "
                  f"{_ratio(facade.p99_ms, native.p99_ms)}, CPU per append "
                  f"{_ratio(facade.cpu_us, native.cpu_us)} (latency and CPU: lower is better)")
        if "appends" in args.only:
            cpu = ServerCpu(server.process.pid)
            runs: dict[str, list[Figure]] = {face.name: [] for face in faces}
            for round_ in range(args.rounds):
                for face in faces:
                    runs[face.name].append(
                        await appends(port, face, f"app-{face.name}-{round_}", cpu, args))
            print(f"(b) single appends, {args.producers} connections on {args.producers} "
                  f"streams, {args.seconds:g} s; server CPU per append")
            rate = {name: statistics.median(f.rate for f in values)
                    for name, values in runs.items()}
            cost = {name: statistics.median(f.cpu_us for f in values)
                    for name, values in runs.items()}
            for name, values in runs.items():
                rounds = ", ".join(f"{value.rate:.0f}" for value in values)
                print(f"    {name:6}  {rate[name]:7.0f} appends/s  [{rounds}]   "
                      f"{cost[name]:6.0f} us CPU per append")
            print(f"    facade/native: rate {_ratio(rate['facade'], rate['native'])}, CPU per "
                  f"append {_ratio(cost['facade'], cost['native'])}")
    finally:
        server.stop()
        await drop_database(dsn)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--duration", type=float, default=8.0)
    parser.add_argument("--rate", type=int, default=1000)
    parser.add_argument("--readers", type=int, default=100)
    parser.add_argument("--producers", type=int, default=16)
    parser.add_argument("--seconds", type=float, default=8.0)
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--only", nargs="+", default=["latency", "appends"],
                        choices=["latency", "appends"])
    asyncio.run(main(parser.parse_args()))
