"""A raw HTTP/1.1 keep-alive load client for the benchmarks: no HTTP library in the hot loop.

Each connection keeps one request in flight (write, read the head, read exactly
`Content-Length` bytes), so the client costs little and every server under test gets the
same client. `load` runs N such connections for a fixed time and returns the rate and
the per-request latencies.
"""

from __future__ import annotations

import asyncio
import os
import resource
import signal
import socket
import statistics
import subprocess
import time
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

Asgi = Callable[[dict[str, Any], Any, Any], Awaitable[None]]


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def request(method: str, path: str, body: bytes = b"", headers: dict[str, str] | None = None
            ) -> bytes:
    """One HTTP/1.1 request's bytes, with `Host` and `Content-Length` set."""
    lines = [f"{method} {path} HTTP/1.1", "Host: bench"]
    lines += [f"{name}: {value}" for name, value in (headers or {}).items()]
    if body or method in ("POST", "PUT"):
        lines.append(f"Content-Length: {len(body)}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + body


async def exchange(reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                   message: bytes) -> tuple[int, bytes]:
    """Send one request on a keep-alive connection; the status and the body."""
    writer.write(message)
    head = await reader.readuntil(b"\r\n\r\n")
    length = 0
    for line in head.split(b"\r\n"):
        if line[:15].lower() == b"content-length:":
            length = int(line[15:])
    body = await reader.readexactly(length)
    return int(head.split(b" ", 2)[1]), body


async def send_once(port: int, message: bytes) -> tuple[int, bytes]:
    """One request on a connection of its own (set-up steps)."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        return await exchange(reader, writer, message)
    finally:
        writer.close()


@dataclass(frozen=True)
class Figure:
    """Requests/s over the run, latency percentiles in milliseconds, and CPU time per
    request in microseconds (0 when unknown): the server's (user + system of its
    processes), this client's, and the whole box's (every core, from `/proc/stat`)."""

    rate: float
    p50_ms: float
    p99_ms: float
    cpu_us: float = 0.0
    client_us: float = 0.0
    box_us: float = 0.0

    @property
    def rest_us(self) -> float:
        """The box's CPU per request beyond the server and this client: Postgres, on a
        quiet box."""
        return max(self.box_us - self.cpu_us - self.client_us, 0.0)

    @property
    def ceiling(self) -> float:
        """Requests/s with every core busy at these costs per request: what the box
        could carry at most, whatever the number of connections."""
        return (os.cpu_count() or 1) * 1e6 / self.box_us if self.box_us else 0.0


class ServerCpu:
    """CPU seconds used so far by a server process and its children (Linux `/proc`). On a
    shared box this is the steadier figure: other work slows a server's answers, but adds
    little to the CPU each answer costs."""

    def __init__(self, pid: int) -> None:
        children = subprocess.run(["pgrep", "-P", str(pid)], capture_output=True,
                                  text=True).stdout.split()
        self.pids = [pid, *(int(child) for child in children)]

    def seconds(self) -> float:
        total = 0
        for pid in self.pids:
            try:
                with open(f"/proc/{pid}/stat") as stat:
                    fields = stat.read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            total += int(fields[11]) + int(fields[12])  # utime, stime
        return total / os.sysconf("SC_CLK_TCK")


def box_seconds() -> float:
    """CPU seconds every core of the box has spent busy since boot (`/proc/stat`: user,
    nice, system, irq, softirq)."""
    with open("/proc/stat") as stat:
        fields = stat.readline().split()
    return sum(int(fields[index]) for index in (1, 2, 3, 6, 7)) / os.sysconf("SC_CLK_TCK")


def client_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


async def measured(cpu: ServerCpu | None, run: Awaitable[Figure]) -> Figure:
    """`run`'s figure, with the CPU per request of the server (when `cpu` is given), of
    this client and of the box."""
    before = (cpu.seconds() if cpu is not None else 0.0, client_seconds(), box_seconds())
    started = time.perf_counter()
    figure = await run
    requests = max(figure.rate * (time.perf_counter() - started), 1.0)
    server, client, box = ((after - earlier) * 1e6 / requests for after, earlier in zip(
        (cpu.seconds() if cpu is not None else 0.0, client_seconds(), box_seconds()),
        before, strict=True))
    return Figure(figure.rate, figure.p50_ms, figure.p99_ms, server, client, box)


async def load(port: int, message_for: Callable[[int], bytes], connections: int,
               seconds: float) -> Figure:
    """`connections` keep-alive connections, connection `i` sending `message_for(i)` in a
    loop for `seconds`; any status >= 300 stops the run with an error."""
    stop = time.perf_counter() + seconds
    latencies: list[float] = []

    async def one(index: int) -> None:
        message = message_for(index)
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        try:
            while time.perf_counter() < stop:
                sent = time.perf_counter()
                status, body = await exchange(reader, writer, message)
                if status >= 300:
                    raise RuntimeError(f"answered {status}: {body[:300]!r}")
                latencies.append(time.perf_counter() - sent)
        finally:
            writer.close()

    started = time.perf_counter()
    await asyncio.gather(*(one(index) for index in range(connections)))
    return figure_of(latencies, time.perf_counter() - started)


def figure_of(latencies: list[float], elapsed: float) -> Figure:
    """The rate and latency percentiles of requests that took `latencies` seconds each,
    all within `elapsed` seconds."""
    ordered = sorted(latencies)
    return Figure(rate=len(ordered) / elapsed,
                  p50_ms=1000 * statistics.median(ordered),
                  p99_ms=1000 * ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))])


@contextmanager
def server_process(args: list[str], stop: signal.Signals = signal.SIGTERM, grace: float = 20.0,
                   **popen: Any) -> Iterator[subprocess.Popen[bytes]]:
    """A server for one measurement, sent `stop` however the measurement ends, and killed
    if it has not exited `grace` seconds later."""
    child: subprocess.Popen[bytes] = subprocess.Popen(args, **popen)
    try:
        yield child
    finally:
        child.send_signal(stop)
        try:
            child.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            child.kill()
            child.wait()


async def wait_listening(port: int, process: subprocess.Popen[bytes]) -> None:
    for _ in range(600):
        if process.poll() is not None:
            raise RuntimeError("server exited")
        try:
            _, writer = await asyncio.open_connection("127.0.0.1", port)
            writer.close()
            return
        except OSError:
            await asyncio.sleep(0.1)
    raise RuntimeError("server did not listen")


def constant_app(status: int, content_type: bytes, body: bytes) -> Asgi:
    """A plain ASGI app that reads any request's body and answers `status` with `body`: the
    floor of the server it runs on."""
    headers = [(b"content-type", content_type), (b"content-length", str(len(body)).encode())]

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            while (await receive())["type"] != "lifespan.shutdown":
                await send({"type": "lifespan.startup.complete"})
            await send({"type": "lifespan.shutdown.complete"})
            return
        while (await receive()).get("more_body"):
            pass
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": body})

    return app
