"""An HTTP proxy in front of the test S3 server (moto) that injects S3's faults.

Each request is read whole, then, with the probability its fault is set to:

- `reset`: the connection is reset (RST, no answer), as by a load balancer
  dropping it; nothing reached S3;
- `stall`: held `stall_seconds` without a byte of answer, then reset: a hung
  S3 front end; nothing reached S3;
- `error`: answered 500 `InternalError` without reaching S3;
- `lost_answer`: forwarded to S3, which does it, then answered 500: the
  client is told a write failed that in fact happened (a body stored that its
  writer believes missing, a delete done that it believes undone).

A key may also be made bad for a while (`bad_keys`, the share of keys, each drawn at its
first request): every request for a bad key draws one of the faults, as in an S3
partition that fails one key's every attempt, so that the client's own retries
(botocore's) run out and the failure reaches Runnel. Otherwise a request is forwarded
as it came (the signature covers the Host header, which
is kept) and S3's answer is passed back. With every probability at 0 (`calm()`)
it is a plain proxy. It runs on an event loop of its own (`start()` returns the
endpoint URL), since the servers under test are separate processes and the test's
own loop may block on them.
"""

from __future__ import annotations

import asyncio
import random
import socket
import struct
import threading
from collections import Counter
from dataclasses import dataclass

from aiohttp import ClientSession, ClientTimeout, web

FAULTS = ("reset", "stall", "error", "lost_answer")
_HOP_BY_HOP = {"connection", "keep-alive", "transfer-encoding", "te", "trailer", "upgrade",
               "proxy-authorization", "proxy-authenticate", "content-length"}
_INTERNAL_ERROR = (b'<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>InternalError'
                   b"</Code><Message>We encountered an internal error. Please try again."
                   b"</Message></Error>")


@dataclass
class FaultRates:
    reset: float = 0.0
    stall: float = 0.0
    error: float = 0.0
    lost_answer: float = 0.0
    bad_keys: float = 0.0

    def pick(self, draw: float) -> str | None:
        for fault in FAULTS:
            draw -= getattr(self, fault)
            if draw < 0:
                return fault
        return None


class S3FaultProxy:
    def __init__(self, target_url: str, stall_seconds: float = 3.0, seed: int = 11) -> None:
        self.target = target_url.rstrip("/")
        self.stall_seconds = stall_seconds
        self.rates = FaultRates()
        self.injected: Counter[str] = Counter()
        """Faults injected so far, by kind (and `forwarded` for requests passed through)."""
        self._random = random.Random(seed)
        self._bad: dict[str, bool] = {}
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._runner: web.AppRunner | None = None
        self._session: ClientSession | None = None

    def start(self) -> str:
        self._thread.start()
        return asyncio.run_coroutine_threadsafe(self._start(), self._loop).result(30)

    def set(self, rates: FaultRates) -> None:
        def apply() -> None:
            self.rates = rates
            self._bad.clear()

        self._loop.call_soon_threadsafe(apply)

    def calm(self) -> None:
        self.set(FaultRates())

    def close(self) -> None:
        asyncio.run_coroutine_threadsafe(self._close(), self._loop).result(30)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(30)
        self._loop.close()

    async def _start(self) -> str:
        self._session = ClientSession(timeout=ClientTimeout(total=60), auto_decompress=False)
        app = web.Application(client_max_size=64 * 1024 * 1024)
        app.router.add_route("*", "/{tail:.*}", self._handle)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        port = self._runner.addresses[0][1]
        return f"http://127.0.0.1:{port}"

    async def _close(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
        if self._session is not None:
            await self._session.close()

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        body = await request.read()
        fault = self.rates.pick(self._random.random())
        if self._bad.setdefault(request.path, self._random.random() < self.rates.bad_keys):
            fault = self._random.choice(FAULTS)
        self.injected[fault or "forwarded"] += 1
        if fault == "stall":
            await asyncio.sleep(self.stall_seconds)
        if fault in ("reset", "stall"):
            _reset(request)
            return web.Response(status=500)  # never sent: the transport is gone
        if fault == "error":
            return _internal_error()
        assert self._session is not None
        headers = {name: value for name, value in request.headers.items()
                   if name.lower() not in _HOP_BY_HOP}
        async with self._session.request(request.method, self.target + request.path_qs,
                                         headers=headers, data=body,
                                         allow_redirects=False) as answer:
            content = await answer.read()
            if fault == "lost_answer":
                return _internal_error()
            # A HEAD answer has no body, but its Content-Length is S3's answer (the size).
            kept = {"content-length"} if request.method == "HEAD" else set()
            return web.Response(status=answer.status, body=content or None, headers={
                name: value for name, value in answer.headers.items()
                if name.lower() not in _HOP_BY_HOP - kept})


def _internal_error() -> web.Response:
    return web.Response(status=500, body=_INTERNAL_ERROR, content_type="application/xml")


def _reset(request: web.Request) -> None:
    transport = request.transport
    if transport is None:
        return
    sock = transport.get_extra_info("socket")
    if sock is not None:  # linger 0: close() sends RST instead of FIN
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    transport.abort()
