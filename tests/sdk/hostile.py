"""A transport between the SDK and a real server that misbehaves on purpose, and counts."""

from __future__ import annotations

import asyncio
import json

import httpx


class Flaky(httpx.AsyncBaseTransport):
    """Forwards every request to the real server, except that appends (`POST …/records`)
    can be refused before they are sent (`refuse`: connect errors), answered 503 without
    reaching the server (`unavailable`), or stored and then have their answer lost
    (`lose`: a read error after the server committed). `batches` holds the record count
    of every append that reached the server. With a `gate`, an append waits for it
    to be set before it goes on (`arrived` is set when one is waiting)."""

    def __init__(self, refuse: int = 0, unavailable: int = 0, lose: int = 0,
                 gate: asyncio.Event | None = None) -> None:
        self.refuse, self.unavailable, self.lose = refuse, unavailable, lose
        self.gate = gate
        self.arrived = asyncio.Event()
        self.inner = httpx.AsyncHTTPTransport()
        self.attempts = 0
        self.batches: list[int] = []
        self.bodies: list[int] = []

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        if not (request.method == "POST" and request.url.path.endswith("/records")):
            return await self.inner.handle_async_request(request)
        self.attempts += 1
        if self.gate is not None:
            self.arrived.set()
            await self.gate.wait()
        if self.refuse > 0:
            self.refuse -= 1
            raise httpx.ConnectError("connection refused (on purpose)", request=request)
        if self.unavailable > 0:
            self.unavailable -= 1
            return httpx.Response(503, headers={"Retry-After": "0"}, json={
                "code": "store_unavailable", "status": 503, "detail": "on purpose"})
        body = await request.aread()
        self.batches.append(len(json.loads(body)["records"]))
        self.bodies.append(len(body))
        response = await self.inner.handle_async_request(request)
        if self.lose > 0:
            self.lose -= 1
            await response.aread()
            await response.aclose()
            raise httpx.ReadError("the answer was lost (on purpose)", request=request)
        return response

    async def aclose(self) -> None:
        await self.inner.aclose()
