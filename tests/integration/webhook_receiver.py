"""A workflow engine's webhook for tests: an aiohttp server on 127.0.0.1 that verifies
every request with the SDK's `verify_webhook`, records it, and answers the statuses it
is told to."""

from __future__ import annotations

import asyncio
import base64
import secrets
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import pytest
from aiohttp import web
from runnel_client import InputWebhook, WebhookVerificationError, verify_webhook


def new_webhook_secret() -> str:
    """A fresh secret in the Standard Webhooks form (32 random bytes)."""
    return "whsec_" + base64.b64encode(secrets.token_bytes(32)).decode()


@dataclass
class Receiver:
    """A workflow engine's webhook on 127.0.0.1: verifies each request's signature with
    `secret` (a request that fails is answered 401 and its reason kept in `refused`),
    records it, and answers `statuses` in turn (then 204). Senders sign with `secret`."""

    url: str = ""
    secret: str = field(default_factory=new_webhook_secret)
    requests: list[tuple[str | None, dict[str, Any]]] = field(default_factory=list)
    """(Idempotency-Key, JSON body) of every request that passed verification."""
    events: list[InputWebhook] = field(default_factory=list)
    """What `verify_webhook` made of each of `requests`."""
    refused: list[str] = field(default_factory=list)
    """Reasons of the requests whose signature did not verify."""
    statuses: list[int] = field(default_factory=list)
    accepted: list[str | None] = field(default_factory=list)
    """Idempotency keys of the requests answered 2xx, in order."""
    hang: bool = False
    """While set, requests are held open without an answer (a delivery stuck mid-way)."""
    release: asyncio.Event = field(default_factory=asyncio.Event)

    async def handle(self, request: web.Request) -> web.Response:
        body = await request.read()
        try:
            event = verify_webhook(self.secret, request.headers, body)
        except WebhookVerificationError as refusal:
            self.refused.append(refusal.reason)
            return web.Response(status=401, text=refusal.reason)
        event_id = request.headers.get("Idempotency-Key")
        self.requests.append((event_id, await request.json()))
        self.events.append(event)
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
