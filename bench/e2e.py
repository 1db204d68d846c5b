"""End-to-end benchmark over a real `runnel serve` process on Postgres. Prints figures; never
passes or fails on them.

1. Append → SSE delivery latency, p50/p99, at 1,000 appends/s with 100 subscribers
   (targets: p50 ≤ 5 ms, p99 ≤ 10 ms). Latency runs from just before the
   producer sends the append to the moment a subscriber has the whole frame; producer and
   subscribers share this process's clock.
2. Fan-out: 5,000 concurrent SSE subscribers (distinct principals) on one server process.
   One record at a time, the time from its append to the moment the LAST subscriber has
   it (target ≤ 0.3 s), the server's RSS per idle subscriber, and `pg_stat_activity`: the
   process's pool plus ONE LISTEN connection, whatever the number of readers. Figures
   from before and after a record's frame was built once: ADR 0048.
3. Resume backfill of 100,000 records by one reader (target ≥ 20,000 records/s).

Readers and the producer are minimal raw-socket HTTP/1.1 clients (no JSON parsing except
the latency timestamp), so the figures measure the server, not the client.

Usage: `.venv/bin/python -m bench.e2e [--duration 10] [--rate 1000] [--readers 100]
[--cases 1000:100 200:1000] [--subscribers 5000] [--backfill 100000]
[--only latency fanout backfill] [--storage memory] [--baseline]`; the Postgres server
comes from `RUNNEL_TEST_PG_DSN` (admin DSN). `--storage memory` runs the same load on the
in-memory backend, to tell the HTTP/SSE layer's share from the storage path's (the fan-out
needs Postgres). `--cases RATE:READERS ...` runs the latency figure once per case (instead
of `--rate`/`--readers`). `--baseline` first runs everything on a server whose caught-up
readers are served by their own tasks (`RUNNEL_SSE_DIRECT_WRITES=false`), then on one
that writes to them from the publisher's call (ADR 0079), back to back.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import resource
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from urllib.parse import urlsplit

import asyncpg
import httpx
import psutil

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.rawhttp import box_seconds, client_seconds
from tests.http.server import RunnelServer, bearer, token
from tests.pg import create_database, drop_database

TARGET_P50_MS = 5.0
TARGET_P99_MS = 10.0
TARGET_P99_MS_BY_CASE = {(200, 1000): 50.0}
"""The p99 targets of other (rate, subscribers) cases than the first figure's."""
TARGET_BACKFILL_PER_SECOND = 20_000
TARGET_FANOUT_SECONDS = 0.3


class RawSubscriber:
    """A minimal SSE reader over HTTP/1.1 (chunked body), without an HTTP library."""

    def __init__(self, on_frame: Callable[[bytes, float], None] | None = None) -> None:
        self.on_frame = on_frame
        self.records = 0
        self.last_id = 0
        self.ended = False
        self.done = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    async def open(self, server: RunnelServer, path: str, auth: str,
                   until_records: int | None = None) -> None:
        url = urlsplit(server.api + path)
        target = url.path + (f"?{url.query}" if url.query else "")
        reader, writer = await asyncio.open_connection(url.hostname, url.port, limit=2**20)
        writer.write(f"GET {target} HTTP/1.1\r\nHost: {url.netloc}\r\n"
                     f"Authorization: Bearer {auth}\r\n\r\n".encode())
        head = await reader.readuntil(b"\r\n\r\n")
        if not head.startswith(b"HTTP/1.1 200") or b"chunked" not in head.lower():
            raise RuntimeError(head.decode(errors="replace"))
        self._task = asyncio.create_task(self._read(reader, writer, until_records))

    async def _read(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                    until_records: int | None) -> None:
        buffer = b""
        try:
            while True:
                size = int((await reader.readuntil(b"\r\n")).split(b";")[0], 16)
                if size == 0:
                    break
                chunk = (await reader.readexactly(size + 2))[:-2]
                now = time.perf_counter()
                buffer += chunk
                frames = buffer.split(b"\r\n\r\n")
                buffer = frames.pop()
                for frame in frames:
                    if frame.startswith(b"id: "):
                        self.records += 1
                        self.last_id = int(frame[4:frame.index(b"\r\n")])
                        if self.on_frame is not None:
                            self.on_frame(frame, now)
                    elif frame.startswith(b"event: end"):
                        self.ended = True
                if self.ended or (until_records is not None and self.records >= until_records):
                    break
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            self.done.set()
            writer.close()

    async def close(self) -> None:
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)


class RawAppender:
    """Appends over a few persistent HTTP/1.1 connections, one request in flight on each:
    the producer costs this process little, so the figures are the server's."""

    def __init__(self, server: RunnelServer, path: str, auth: str, connections: int) -> None:
        url = urlsplit(server.api + path)
        self._host, self._port, self._netloc, self._path = (url.hostname, url.port, url.netloc,
                                                            url.path)
        self._auth = auth
        self._free: asyncio.Queue[tuple[asyncio.StreamReader, asyncio.StreamWriter]] = (
            asyncio.Queue())
        self._connections = connections

    async def open(self) -> None:
        for _ in range(self._connections):
            self._free.put_nowait(await asyncio.open_connection(self._host, self._port))

    async def append(self, body: bytes) -> int:
        reader, writer = await self._free.get()
        try:
            writer.write(f"POST {self._path} HTTP/1.1\r\nHost: {self._netloc}\r\n"
                         f"Authorization: Bearer {self._auth}\r\n"
                         f"Content-Type: application/json\r\n"
                         f"Content-Length: {len(body)}\r\n\r\n".encode() + body)
            head = await reader.readuntil(b"\r\n\r\n")
            length = int(head.lower().split(b"content-length: ")[1].split(b"\r\n")[0])
            await reader.readexactly(length)
            return int(head[9:12])
        finally:
            self._free.put_nowait((reader, writer))

    async def close(self) -> None:
        while not self._free.empty():
            _, writer = self._free.get_nowait()
            writer.close()


def percentile(samples: list[float], fraction: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(len(ordered) * fraction))]


def sent_at(frame: bytes) -> float:
    data = frame[frame.index(b"data: ") + 6:]
    return float(json.loads(data)["payload"]["t"])


async def create_stream(api: httpx.AsyncClient, run_id: str, **pins: object) -> None:
    response = await api.post(f"/runs/{run_id}/streams",
                              json={"stream_id": "s", "content_class": "bench", **pins})
    response.raise_for_status()


TIMED_READERS = 10
"""Readers whose every frame is timed (the others only count theirs), so that the client's
JSON parsing does not stand in the server's way."""


async def latency(server: RunnelServer, duration: float, rate: int, subscribers: int) -> None:
    samples: list[float] = []
    append_ms: list[float] = []
    warmup_until = time.perf_counter() + 1.0

    def on_frame(frame: bytes, received: float) -> None:
        if received > warmup_until:
            samples.append((received - sent_at(frame)) * 1000)

    run_id = f"latency-{rate}-{subscribers}"
    async with httpx.AsyncClient(base_url=server.api, headers=bearer(token()),
                                 timeout=30) as api:
        await create_stream(api, run_id, credit={"max_unread_items": 100_000,
                                                 "max_total_items": 1_000_000})
        readers = [RawSubscriber(on_frame if n < TIMED_READERS else None)
                   for n in range(subscribers)]
        for reader in readers:
            await reader.open(server, f"/runs/{run_id}/streams/s/subscribe", token())
        producer = RawAppender(server, f"/runs/{run_id}/streams/s/records", token(), 16)
        await producer.open()

        async def one(n: int) -> int:
            started = time.perf_counter()
            body = json.dumps({"records": [{"payload": {"t": started, "n": n}}]}).encode()
            status = await producer.append(body)
            if started > warmup_until:
                append_ms.append((time.perf_counter() - started) * 1000)
            return status

        total = int(duration * rate)
        cpu_before = cpu_seconds(server), client_seconds(), box_seconds()
        start = time.perf_counter()
        pending: list[asyncio.Task[int]] = []
        for n in range(total):
            delay = start + n / rate - time.perf_counter()
            if delay > 0:
                await asyncio.sleep(delay)
            pending.append(asyncio.create_task(one(n)))
        statuses = await asyncio.gather(*pending)
        assert all(status == 201 for status in statuses), set(statuses)
        await producer.close()
        await api.post(f"/runs/{run_id}/streams/s/close")
        await asyncio.wait_for(asyncio.gather(*(reader.done.wait() for reader in readers)), 60)
        cpu, client, box = (after - before for after, before in zip(
            (cpu_seconds(server), client_seconds(), box_seconds()), cpu_before, strict=True))
        wall = time.perf_counter() - start
        complete = all(reader.last_id == total for reader in readers)
    print(f"[latency] {rate} appends/s for {duration:.0f} s, {subscribers} subscribers, "
          f"{len(samples)} deliveries to {min(TIMED_READERS, subscribers)} of them measured "
          f"(after 1 s warm-up); every reader got every record: {complete}")
    print(f"          append -> SSE frame: p50 {statistics.median(samples):.2f} ms "
          f"(target <= {TARGET_P50_MS}), p99 {percentile(samples, 0.99):.2f} ms "
          f"(target <= {TARGET_P99_MS_BY_CASE.get((rate, subscribers), TARGET_P99_MS)}), "
          f"max {max(samples):.2f} ms")
    print(f"          append round trip alone: p50 {statistics.median(append_ms):.2f} ms, "
          f"p99 {percentile(append_ms, 0.99):.2f} ms")
    print(f"          server CPU until every reader had every record: {cpu:.1f} s "
          f"({cpu / wall * 100:.0f} % of one core), "
          f"{cpu / (total * subscribers) * 1e6:.1f} µs per record per subscriber")
    cores = psutil.cpu_count() or 1
    print(f"          the box meanwhile: {box / wall:.2f} of {cores} cores busy (server "
          f"{cpu / wall:.2f}, these readers and the producer {client / wall:.2f}, the rest "
          f"{max(box - cpu - client, 0) / wall:.2f}: Postgres, on a quiet box)")


async def connections(admin_dsn: str, database: str, server: RunnelServer) -> str:
    connection = await asyncpg.connect(admin_dsn)
    try:
        rows = await connection.fetch(
            "SELECT application_name, state, count(*) AS n FROM pg_stat_activity "
            "WHERE datname = $1 GROUP BY 1, 2 ORDER BY 1, 2", database)
        ports = {c.laddr.port for c in psutil.Process(server.process.pid).net_connections("tcp")
                 if c.raddr and c.raddr.port == 5432}
        from_server = await connection.fetchval(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = $1 AND client_port = ANY($2)",
            database, list(ports))
    finally:
        await connection.close()
    groups = ", ".join(f"{row['application_name'] or '(none)'}/{row['state']}: {row['n']}"
                       for row in rows)
    return f"{from_server} from the server process [{groups}]"


class LastArrival:
    """When the last of the fan-out's readers got each record."""

    def __init__(self, readers: int) -> None:
        self.readers = readers
        self.got: dict[int, int] = {}
        self.last_at: dict[int, float] = {}
        self.everyone = asyncio.Event()
        self.waiting_for = 0

    def on_record(self, sequence: int, received: float) -> None:
        got = self.got[sequence] = self.got.get(sequence, 0) + 1
        self.last_at[sequence] = received
        if got == self.readers and sequence == self.waiting_for:
            self.everyone.set()


class CountingReader(asyncio.Protocol):
    """A fan-out subscriber at the least cost to this process: it finds record frames in
    the bytes as they arrive and notes when each came, parsing nothing else. (The server
    writes whole frames, one chunk per write, so a frame never straddles a chunk: split on
    the blank line, a piece holds at most one `id:`.)"""

    def __init__(self, request: bytes, arrivals: LastArrival) -> None:
        self._request = request
        self._arrivals = arrivals
        self._tail = b""
        self.opened: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self.records = 0
        self.last_id = 0
        self.transport: asyncio.Transport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]
        transport.write(self._request)  # type: ignore[attr-defined]

    def data_received(self, data: bytes) -> None:
        now = time.perf_counter()
        pieces = (self._tail + data).split(b"\r\n\r\n")
        self._tail = pieces.pop()
        for piece in pieces:
            if not self.opened.done():
                if not piece.startswith(b"HTTP/1.1 200"):
                    self.opened.set_exception(RuntimeError(piece.decode(errors="replace")))
                    return
                self.opened.set_result(None)
                continue
            at = piece.find(b"id: ")
            if at >= 0:
                sequence = int(piece[at + 4:piece.index(b"\r\n", at)])
                self.records += 1
                self.last_id = sequence
                self._arrivals.on_record(sequence, now)

    def connection_lost(self, exc: Exception | None) -> None:
        if not self.opened.done():
            self.opened.set_exception(ConnectionError("closed before the response"))


async def open_counting_reader(server: RunnelServer, path: str, auth: str,
                               arrivals: LastArrival) -> CountingReader:
    url = urlsplit(server.api + path)
    request = (f"GET {url.path} HTTP/1.1\r\nHost: {url.netloc}\r\n"
               f"Authorization: Bearer {auth}\r\n\r\n").encode()
    _, reader = await asyncio.get_running_loop().create_connection(
        lambda: CountingReader(request, arrivals), url.hostname, url.port)
    await reader.opened
    return reader


def rss(server: RunnelServer) -> int:
    return int(psutil.Process(server.process.pid).memory_info().rss)


def cpu_seconds(server: RunnelServer) -> float:
    """The server's CPU time so far: on a busy box, a steadier figure than wall time."""
    times = psutil.Process(server.process.pid).cpu_times()
    return float(times.user + times.system)


async def fan_out(server: RunnelServer, admin_dsn: str, database: str, subscribers: int,
                  records: int) -> None:
    run_id = "fanout"
    arrivals = LastArrival(subscribers)
    async with httpx.AsyncClient(base_url=server.api, headers=bearer(token()),
                                 timeout=60) as api:
        await create_stream(api, run_id)
        before = await connections(admin_dsn, database, server)
        # One reader first, so the server has served a subscription before its RSS is taken.
        warm = RawSubscriber()
        await warm.open(server, f"/runs/{run_id}/streams/s/subscribe", token(sub="warm"))
        await asyncio.sleep(0.5)
        rss_before = rss(server)
        path = f"/runs/{run_id}/streams/s/subscribe"
        readers: list[CountingReader] = []
        started = time.perf_counter()
        for batch in range(0, subscribers, 100):
            readers += await asyncio.gather(*(
                open_counting_reader(server, path, token(sub=f"reader-{n}"), arrivals)
                for n in range(batch, min(batch + 100, subscribers))))
        opened = time.perf_counter() - started
        await asyncio.sleep(1.0)
        rss_idle = rss(server)
        # This process holds thousands of connections too: keep its collector out of the way.
        gc.collect()
        gc.freeze()
        during = await connections(admin_dsn, database, server)
        reach: list[float] = []
        cpu: list[float] = []
        started = time.perf_counter()
        for n in range(1, records + 1):
            arrivals.everyone.clear()
            arrivals.waiting_for = n
            sent, cpu_before = time.perf_counter(), cpu_seconds(server)
            response = await api.post(f"/runs/{run_id}/streams/s/records",
                                      json={"records": [{"payload": {"n": n}}]})
            response.raise_for_status()
            await asyncio.wait_for(arrivals.everyone.wait(), 120)
            reach.append(arrivals.last_at[n] - sent)
            cpu.append(cpu_seconds(server) - cpu_before)
        delivered = time.perf_counter() - started
        complete = sum(1 for reader in readers if reader.records == records
                       and reader.last_id == records)
        after = await connections(admin_dsn, database, server)
        for reader in readers:
            if reader.transport is not None:
                reader.transport.close()
        await warm.close()
        gc.unfreeze()
    per_reader = (rss_idle - rss_before) / subscribers / 1024
    print(f"[fan-out] {subscribers} subscribers (distinct principals) opened in {opened:.1f} s; "
          f"{records} records, one at a time, delivered to all in {delivered:.2f} s; readers "
          f"with every record: {complete}/{subscribers}")
    print(f"          one record to all {subscribers}: median {statistics.median(reach):.3f} s, "
          f"best {min(reach):.3f} s, worst {max(reach):.3f} s "
          f"(target <= {TARGET_FANOUT_SECONDS} s); server CPU per "
          f"record: median {statistics.median(cpu):.3f} s")
    print(f"          server RSS per idle subscriber: {per_reader:.1f} KiB "
          f"({rss_before / 2**20:.0f} MiB before, {rss_idle / 2**20:.0f} MiB with the readers)")
    print(f"          Postgres connections (pg_stat_activity): before readers {before}")
    print(f"          with {subscribers} readers: {during}")
    print(f"          after delivery: {after}")


async def backfill(server: RunnelServer, records: int) -> None:
    run_id = "backfill"
    batch = 1000
    async with httpx.AsyncClient(base_url=server.api, headers=bearer(token()),
                                 timeout=120) as api:
        await create_stream(api, run_id, credit={"max_unread_items": 100_000,
                                                 "max_unread_bytes": 256 * 2**20,
                                                 "max_total_items": 10_000_000})
        started = time.perf_counter()
        for first in range(0, records, batch):
            response = await api.post(f"/runs/{run_id}/streams/s/records", json={"records": [
                {"payload": {"n": n, "text": "token"}} for n in range(first, first + batch)]})
            response.raise_for_status()
        appended = time.perf_counter() - started
        await api.post(f"/runs/{run_id}/streams/s/close")
    reader = RawSubscriber()
    started = time.perf_counter()
    await reader.open(server, f"/runs/{run_id}/streams/s/subscribe?after=0", token())
    await asyncio.wait_for(reader.done.wait(), 600)
    elapsed = time.perf_counter() - started
    print(f"[backfill] {records:,} records appended in batches of {batch} in {appended:.1f} s; "
          f"one reader from cursor 0 got {reader.records:,} (last id {reader.last_id}, "
          f"end: {reader.ended}) in {elapsed:.2f} s = {reader.records / elapsed:,.0f} records/s "
          f"(target ≥ {TARGET_BACKFILL_PER_SECOND:,})")


def raise_open_files(needed: int) -> None:
    """Each subscriber is a socket here and one in the server (which inherits the limit)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < hard:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    if hard != resource.RLIM_INFINITY and hard < needed:
        print(f"open files are capped at {hard}, below the {needed} this run needs: expect "
              "failed connections (raise `ulimit -Hn`)")


async def main(args: argparse.Namespace) -> None:
    cases = [tuple(int(part) for part in case.split(":")) for case in args.cases] or [
        (args.rate, args.readers)]
    raise_open_files(args.subscribers + max(readers for _, readers in cases) + 200)
    for direct in ([False, True] if args.baseline else [True]):
        print(f"=== direct writes {'on' if direct else 'off'} "
              f"(RUNNEL_SSE_DIRECT_WRITES={str(direct).lower()})")
        await run(args, cases, direct)


async def run(args: argparse.Namespace, cases: list[tuple[int, ...]], direct: bool) -> None:
    admin_dsn = args.admin_dsn
    dsn = await create_database(prefix="runnel_bench")
    database = urlsplit(dsn).path.lstrip("/")
    data_dir = Path(tempfile.mkdtemp(prefix="runnel-bench-"))
    storage = ({"RUNNEL_DATABASE_URL": dsn} if args.storage == "postgres"
               else {"RUNNEL_STORAGE": "memory"})
    # Every subscriber connects from this one address, all at once (ADR 0021).
    caps = {"RUNNEL_MAX_CONNECTIONS": "100000", "RUNNEL_MAX_CONNECTIONS_PER_ADDRESS": "100000",
            "RUNNEL_MAX_SSE_CONNECTIONS": "100000"}
    server = RunnelServer.start({**storage, **caps,
                                 "RUNNEL_MAX_SUBSCRIPTIONS_PER_PRINCIPAL": "100000",
                                 "RUNNEL_SSE_DIRECT_WRITES": str(direct).lower()}, data_dir)
    try:
        print(f"server pid {server.process.pid} on {server.url}, storage {args.storage}"
              + (f", database {database}" if args.storage == "postgres" else ""))
        if "latency" in args.only:
            for rate, readers in cases:
                await latency(server, args.duration, rate, readers)
        if "fanout" in args.only and args.storage == "postgres":
            await fan_out(server, admin_dsn, database, args.subscribers, args.fanout_records)
        if "backfill" in args.only:
            await backfill(server, args.backfill)
    finally:
        server.stop()
        await drop_database(dsn)


if __name__ == "__main__":
    from tests.pg import ADMIN_DSN

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--duration", type=float, default=10.0)
    parser.add_argument("--rate", type=int, default=1000)
    parser.add_argument("--readers", type=int, default=100,
                        help="subscribers during the latency run")
    parser.add_argument("--subscribers", type=int, default=5000,
                        help="subscribers during the fan-out run")
    parser.add_argument("--cases", nargs="*", default=[], metavar="RATE:READERS",
                        help="latency runs, each at RATE appends/s with READERS subscribers")
    parser.add_argument("--baseline", action="store_true",
                        help="run first with direct writes off, then on (ADR 0079)")
    parser.add_argument("--fanout-records", type=int, default=10)
    parser.add_argument("--backfill", type=int, default=100_000)
    parser.add_argument("--only", nargs="+", default=["latency", "fanout", "backfill"],
                        choices=["latency", "fanout", "backfill"])
    parser.add_argument("--admin-dsn", default=ADMIN_DSN)
    parser.add_argument("--storage", choices=["postgres", "memory"], default="postgres",
                        help="memory isolates the HTTP/SSE layer from the storage path")
    asyncio.run(main(parser.parse_args()))
