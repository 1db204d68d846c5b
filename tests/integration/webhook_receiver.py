"""A workflow engine's webhook for tests: an aiohttp server on 127.0.0.1 that records
every request and answers the statuses it is told to."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import pytest
from aiohttp import web


@dataclass
class Receiver:
    """A workflow engine's webhook on 127.0.0.1: records each request, answers `statuses`
    in turn (then 204)."""

    url: str = ""
    requests: list[tuple[str | None, dict[str, Any]]] = field(default_factory=list)
    statuses: list[int] = field(default_factory=list)
    accepted: list[str | None] = field(default_factory=list)
    """Idempotency keys of the requests answered 2xx, in order."""
    hang: bool = False
    """While set, requests are held open without an answer (a delivery stuck mid-way)."""
    release: asyncio.Event = field(default_factory=asyncio.Event)

    async def handle(self, request: web.Request) -> web.Response:
        event_id = request.headers.get("Idempotency-Key")
        self.requests.append((event_id, await request.json()))
        if self.hang:
            await self.release.wait()
            return web.Response(status=503, text="released")
        status = self.statuses.pop(0) if self.statuses else 204
        if status < 300:
            self.accepted.append(event_id)
        return web.Response(status=status, text="" if status == 204 else "nope")


@pytest.fixture
async def receiver() -> AsyncIterator[Receiver]:
    found = Receiver()
    app = web.Application()
    app.router.add_post("/hook", found.handle)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = runner.addresses[0][1]
    found.url = f"http://127.0.0.1:{port}/hook"
    try:
        yield found
    finally:
        found.release.set()
        await runner.cleanup()
