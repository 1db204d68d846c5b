"""Sustained soak over a real `runnel serve` process on Postgres. Prints figures; never passes
or fails on them (it is not part of `make test`).

200 appends/s spread over 20 streams, 500 subscribers (25 a stream, distinct principals).
One subscriber a stream stays connected and times its frames (append -> SSE frame); the
others hang up at random (every `--reconnect-mean` seconds on average) and come back with
`Last-Event-ID`. Every 30 s: the server's RSS and CPU, the delivery p50/p99 over those 30 s,
appends, frames and reconnects so far. At the end every stream is closed and every
subscriber reads to its `end` frame; then, per subscriber, whether it got every record of
its stream once and in order (no record lost or repeated, across all its connections), and
the server's RSS growth since the warm-up (flagged above 10 %). The warm-up covers the
process's shared record frames filling to their bound (`FrameMemo`, 16 MiB counted): at
200 appends/s of these small records that takes about 230 s, and until then RSS grows
by design.

Usage: `.venv/bin/python -m bench.soak [--duration 600] [--rate 200] [--streams 20]
[--subscribers 500] [--reconnect-mean 20] [--report-every 30] [--warmup 300]`.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

import httpx
import psutil

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.e2e import RawAppender, cpu_seconds, percentile, raise_open_files, rss
from tests.http.server import RunnelServer, bearer, token
from tests.pg import create_database, drop_database

RUN_ID = "soak"
RSS_GROWTH_FLAG = 0.10


@dataclass
class Tally:
    """What the subscribers saw, for the periodic report and the final check."""

    samples: list[float] = field(default_factory=list)
    """Delivery latencies (ms) of the timed subscribers since the last report."""
    appends: list[float] = field(default_factory=list)
    """Append round trips (ms) since the last report."""
    frames: int = 0
    reconnects: int = 0
    failed_connects: int = 0


class Subscriber:
    """One subscriber over raw HTTP/1.1: every record frame is checked against the last one
    it got (over all its connections): the next, or a repeat, or a gap."""

    def __init__(self, server: RunnelServer, stream_id: str, number: int, timed: bool,
                 tally: Tally) -> None:
        self.url = urlsplit(f"{server.api}/runs/{RUN_ID}/streams/{stream_id}/subscribe")
        self.stream_id = stream_id
        self.auth = token(sub=f"soak-{number}")
        self.timed = timed
        self.tally = tally
        self.last = 0
        self.repeats = 0
        self.gaps = 0
        self.ended = False
        self.connections = 0

    async def run(self, stop: asyncio.Event, reconnect_mean: float | None) -> None:
        """Connect, read, hang up at random (unless timed) and come back, until the stream
        ends; once `stop` is set, read on without hanging up until the end frame."""
        while not self.ended:
            hang_up_in = (None if reconnect_mean is None or stop.is_set()
                          else random.expovariate(1 / reconnect_mean))
            try:
                await asyncio.wait_for(self._connection(stop), hang_up_in)
            except TimeoutError:
                self.tally.reconnects += 1
            except (OSError, asyncio.IncompleteReadError, RuntimeError):
                self.tally.failed_connects += 1
                await asyncio.sleep(0.5)

    async def _connection(self, stop: asyncio.Event) -> None:
        resume = f"Last-Event-ID: {self.last}\r\n" if self.last else ""
        request = (f"GET {self.url.path} HTTP/1.1\r\nHost: {self.url.netloc}\r\n"
                   f"Authorization: Bearer {self.auth}\r\n{resume}\r\n").encode()
        transport, protocol = await asyncio.get_running_loop().create_connection(
            lambda: ChunkedFrames(request, self._on_frame), self.url.hostname, self.url.port)
        self.connections += 1
        try:
            await protocol.closed
        finally:
            transport.close()

    def _on_frame(self, frame: bytes, now: float) -> None:
        if frame.startswith(b"id: "):
            sequence = int(frame[4:frame.index(b"\r\n")])
            if sequence <= self.last:
                self.repeats += 1
                return
            if sequence > self.last + 1:
                self.gaps += sequence - self.last - 1
            self.last = sequence
            self.tally.frames += 1
            if self.timed:
                data = frame[frame.index(b"data: ") + 6:]
                self.tally.samples.append((now - json.loads(data)["payload"]["t"]) * 1000)
        elif frame.startswith(b"event: end"):
            self.ended = True


class ChunkedFrames(asyncio.Protocol):
    """An event-stream response read off the socket as it comes: the status line checked,
    the chunked framing undone, each complete frame handed on (cheaper than a stream
    reader: this process reads for all the subscribers)."""

    def __init__(self, request: bytes, on_frame: Callable[[bytes, float], None]) -> None:
        self._request = request
        self._on_frame = on_frame
        self._raw = bytearray()
        self._body = b""
        self._head = True
        self.closed: asyncio.Future[None] = asyncio.get_running_loop().create_future()

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self._transport = transport
        transport.write(self._request)  # type: ignore[attr-defined]

    def data_received(self, data: bytes) -> None:
        now = time.time()
        self._raw += data
        if self._head:
            end = self._raw.find(b"\r\n\r\n")
            if end < 0:
                return
            if not self._raw.startswith(b"HTTP/1.1 200"):
                self._finish(RuntimeError(self._raw[:end].decode(errors="replace")))
                return
            del self._raw[:end + 4]
            self._head = False
        while (line := self._raw.find(b"\r\n")) >= 0:
            size = int(self._raw[:line], 16)
            if size == 0:
                self._finish(None)
                return
            if len(self._raw) < line + 2 + size + 2:
                break
            self._body += self._raw[line + 2:line + 2 + size]
            del self._raw[:line + 2 + size + 2]
        frames = self._body.split(b"\r\n\r\n")
        self._body = frames.pop()
        for frame in frames:
            self._on_frame(frame, now)
            if frame.startswith(b"event: end"):
                self._finish(None)
                return

    def connection_lost(self, exc: Exception | None) -> None:
        self._finish(None)

    def _finish(self, error: Exception | None) -> None:
        if not self.closed.done():
            if error is None:
                self.closed.set_result(None)
            else:
                self.closed.set_exception(error)
        self._transport.close()


async def produce(server: RunnelServer, streams: list[str], rate: int, duration: float,
                  counts: dict[str, int], errors: list[int], tally: Tally) -> None:
    appenders = {stream: RawAppender(server, f"/runs/{RUN_ID}/streams/{stream}/records",
                                     token(), 2) for stream in streams}
    for appender in appenders.values():
        await appender.open()

    async def one(stream: str, n: int) -> None:
        sent = time.time()
        body = json.dumps({"records": [{"payload": {"t": sent, "n": n}}]}).encode()
        status = await appenders[stream].append(body)
        tally.appends.append((time.time() - sent) * 1000)
        if status == 201:
            counts[stream] += 1
        else:
            errors.append(status)

    pending: set[asyncio.Task[None]] = set()
    start = time.perf_counter()
    n = 0
    while (elapsed := time.perf_counter() - start) < duration:
        due = int(elapsed * rate) + 1
        while n < due:
            task = asyncio.create_task(one(streams[n % len(streams)], n))
            pending.add(task)
            task.add_done_callback(pending.discard)
            n += 1
        await asyncio.sleep(max(0.0, start + n / rate - time.perf_counter()))
    await asyncio.gather(*pending)
    for appender in appenders.values():
        await appender.close()


async def report(server: RunnelServer, tally: Tally, counts: dict[str, int], every: float,
                 started: float, rss_series: list[tuple[float, int]], done: asyncio.Event
                 ) -> None:
    me = psutil.Process()
    cpu_before, at_before = cpu_seconds(server), time.perf_counter()
    mine_before = sum(me.cpu_times()[:2])
    while not done.is_set():
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(done.wait(), every)
        elapsed = time.perf_counter() - started
        cpu, at, mine = cpu_seconds(server), time.perf_counter(), sum(me.cpu_times()[:2])
        samples, tally.samples = tally.samples, []
        appends, tally.appends = tally.appends, []
        memory = rss(server)
        rss_series.append((elapsed, memory))
        latency = (f"p50 {statistics.median(samples):.1f} ms, p99 "
                   f"{percentile(samples, 0.99):.1f} ms, max {max(samples):.1f} ms"
                   if samples else "no samples")
        append = (f"p50 {statistics.median(appends):.1f} ms, p99 "
                  f"{percentile(appends, 0.99):.1f} ms" if appends else "none")
        print(f"[{elapsed:6.0f} s] RSS {memory / 2**20:.0f} MiB, server CPU "
              f"{(cpu - cpu_before) / (at - at_before) * 100:.0f} % (this client "
              f"{(mine - mine_before) / (at - at_before) * 100:.0f} %), append -> SSE {latency} "
              f"({len(samples)} timed), the append alone {append}; appended "
              f"{sum(counts.values())}, frames {tally.frames}, reconnects {tally.reconnects}, "
              f"failed connects {tally.failed_connects}", flush=True)
        cpu_before, at_before, mine_before = cpu, at, mine


async def soak(server: RunnelServer, args: argparse.Namespace) -> None:
    streams = [f"s{n}" for n in range(args.streams)]
    async with httpx.AsyncClient(base_url=server.api, headers=bearer(token()),
                                 timeout=60) as api:
        for stream in streams:
            response = await api.post(f"/runs/{RUN_ID}/streams", json={
                "stream_id": stream, "content_class": "bench",
                "credit": {"max_unread_items": 1_000_000, "max_total_items": 10_000_000}})
            response.raise_for_status()
        tally = Tally()
        subscribers = [Subscriber(server, streams[n % len(streams)], n, n < len(streams), tally)
                       for n in range(args.subscribers)]
        stop = asyncio.Event()
        readers = [asyncio.create_task(subscriber.run(
            stop, None if subscriber.timed else args.reconnect_mean))
            for subscriber in subscribers]
        await asyncio.sleep(2.0)  # let them connect
        counts = dict.fromkeys(streams, 0)
        errors: list[int] = []
        rss_series: list[tuple[float, int]] = []
        done = asyncio.Event()
        started = time.perf_counter()
        reporting = asyncio.create_task(report(server, tally, counts, args.report_every,
                                               started, rss_series, done))
        await produce(server, streams, args.rate, args.duration, counts, errors, tally)
        rss_end = rss(server)
        stop.set()
        for stream in streams:
            (await api.post(f"/runs/{RUN_ID}/streams/{stream}/close")).raise_for_status()
        finished = await asyncio.wait(readers, timeout=120)
        done.set()
        await reporting
    appended = sum(counts.values())
    whole = [subscriber for subscriber in subscribers
             if subscriber.ended and subscriber.last == counts[subscriber.stream_id]
             and subscriber.repeats == 0 and subscriber.gaps == 0]
    lost = sum(max(0, counts[s.stream_id] - s.last) + s.gaps for s in subscribers)
    repeated = sum(s.repeats for s in subscribers)
    connections = sum(s.connections for s in subscribers)
    print(f"[soak] {appended} records appended in {args.duration:.0f} s over {len(streams)} "
          f"streams ({appended / args.duration:.0f}/s), {len(errors)} failed appends "
          f"{sorted(set(errors))}; {len(subscribers)} subscribers, {connections} connections "
          f"({tally.reconnects} random reconnects), {len(finished[0])} read to their end")
    print(f"       every record once and in order: {len(whole)}/{len(subscribers)} "
          f"subscribers; records lost {lost}, repeated {repeated}")
    warm = [memory for at, memory in rss_series if at >= args.warmup]
    if warm:
        growth = (rss_end - warm[0]) / warm[0]
        flag = "  <-- GROWTH ABOVE 10 %" if growth > RSS_GROWTH_FLAG else ""
        print(f"       server RSS after the {args.warmup:.0f} s warm-up {warm[0] / 2**20:.0f} MiB,"
              f" at the end {rss_end / 2**20:.0f} MiB: {growth * 100:+.1f} %{flag}")
    else:
        print(f"       server RSS at the end {rss_end / 2**20:.0f} MiB (the run was shorter "
              f"than its {args.warmup:.0f} s warm-up: no growth figure)")


async def main(args: argparse.Namespace) -> None:
    raise_open_files(2 * args.subscribers + 4 * args.streams + 200)
    dsn = await create_database(prefix="runnel_soak")
    data_dir = Path(tempfile.mkdtemp(prefix="runnel-soak-"))
    caps = {"RUNNEL_MAX_CONNECTIONS": "100000", "RUNNEL_MAX_CONNECTIONS_PER_ADDRESS": "100000",
            "RUNNEL_MAX_SSE_CONNECTIONS": "100000",
            "RUNNEL_MAX_SUBSCRIPTIONS_PER_PRINCIPAL": "100000"}
    server = RunnelServer.start({"RUNNEL_DATABASE_URL": dsn, **caps}, data_dir)
    try:
        print(f"server pid {server.process.pid} on {server.url}; {args.rate} appends/s over "
              f"{args.streams} streams, {args.subscribers} subscribers, {args.duration:.0f} s",
              flush=True)
        await soak(server, args)
    finally:
        server.stop()
        await drop_database(dsn)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--duration", type=float, default=600.0)
    parser.add_argument("--rate", type=int, default=200)
    parser.add_argument("--streams", type=int, default=20)
    parser.add_argument("--subscribers", type=int, default=500)
    parser.add_argument("--reconnect-mean", type=float, default=20.0,
                        help="mean seconds between a subscriber's random hang-ups")
    parser.add_argument("--report-every", type=float, default=30.0)
    parser.add_argument("--warmup", type=float, default=300.0,
                        help="seconds after which RSS growth is measured")
    asyncio.run(main(parser.parse_args()))
