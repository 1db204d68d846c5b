"""`runnel worker`'s metrics port: GET /metrics and /healthz, nothing else.

Rules:
- it runs on the worker's own event loop (`asyncio.start_server`), so a scrape reads
  the same live objects the workers change, and never blocks them: every read is
  awaited, the store's within `scrape.STORE_READ_SECONDS`;
- a request head must arrive within `HEAD_SECONDS` and fit in `MAX_HEAD_BYTES`, at most
  `MAX_CLIENTS` connections are served at once, and every answer closes its
  connection: a scraper cannot hold the port, and a stray client cannot grow it;
- no token: like `runnel serve`'s /metrics, what it shows names no tenant, run or
  stream (keep the port on a private address).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from contextlib import suppress

log = logging.getLogger("runnel.metrics_server")

HEAD_SECONDS = 5.0
MAX_HEAD_BYTES = 8 * 1024
MAX_CLIENTS = 16

Scrape = Callable[[], Awaitable[tuple[bytes, str]]]


class MetricsServer:
    def __init__(self, scrape: Scrape) -> None:
        self._scrape = scrape
        self._clients = asyncio.Semaphore(MAX_CLIENTS)

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            if self._clients.locked():
                await _answer(writer, 503, b"busy\n", "text/plain")
                return
            async with self._clients:
                await self._serve(reader, writer)
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        except Exception:
            log.exception("metrics request failed")
        finally:
            writer.close()
            with suppress(Exception):
                await writer.wait_closed()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            async with asyncio.timeout(HEAD_SECONDS):
                head = await reader.readuntil(b"\r\n\r\n")
        except (TimeoutError, asyncio.LimitOverrunError):
            return
        method, _, rest = head.partition(b" ")
        path = rest.partition(b" ")[0].partition(b"?")[0]
        if method not in (b"GET", b"HEAD"):
            await _answer(writer, 405, b"method not allowed\n", "text/plain")
        elif path == b"/metrics":
            body, content_type = await self._scrape()
            await _answer(writer, 200, body, content_type, head_only=method == b"HEAD")
        elif path == b"/healthz":
            await _answer(writer, 200, b'{"status":"ok"}', "application/json")
        else:
            await _answer(writer, 404, b"not found\n", "text/plain")


_REASONS = {200: "OK", 404: "Not Found", 405: "Method Not Allowed", 503: "Service Unavailable"}


async def _answer(writer: asyncio.StreamWriter, status: int, body: bytes, content_type: str,
                  head_only: bool = False) -> None:
    head = (f"HTTP/1.1 {status} {_REASONS[status]}\r\nContent-Type: {content_type}\r\n"
            f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n").encode()
    writer.write(head if head_only else head + body)
    await writer.drain()


class BoundPort:
    """The port, bound (so a taken port fails before anything else starts) but not yet
    serving: `serve()` starts answering once what the scrape reads exists."""

    def __init__(self, server: asyncio.Server, host: str) -> None:
        self._server = server
        port = server.sockets[0].getsockname()[1]
        self.url = f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"

    async def serve(self) -> None:
        await self._server.start_serving()

    async def close(self) -> None:
        self._server.close()
        await self._server.wait_closed()


async def bind_metrics_port(scrape: Scrape, host: str, port: int) -> BoundPort:
    """`host:port` bound (`OSError` if it cannot be); close it with `close()`."""
    server = await asyncio.start_server(MetricsServer(scrape).handle, host, port,
                                        limit=MAX_HEAD_BYTES, start_serving=False)
    return BoundPort(server, host)
