"""`InMemoryRunnel`: Runnel itself in this process, as the SDK's test double (ADR 0038).

It is not a model of the server: it is the server's application (`create_asgi_app`,
every route, rule, error and shape) on the in-memory backend, the one the node's
container selects for the `memory` storage setting (`entrypoints.composition.container`),
on a loop of its own in a daemon thread. Clients are the SDK's own, `RunnelClient` and
`AsyncRunnelClient`, over a transport that reaches the application without a socket
(`faces.py`). So a refusal the server makes (credit, size, an unknown field, a closed
stream, auth) is made here by the same code, and every answer has the server's shape;
only what lives outside the application differs: no database, nothing survives
`close()`, no socket-level limits (connection caps, header and body deadlines).
"""

from __future__ import annotations

import asyncio
import secrets
from collections.abc import Iterable
from types import TracebackType
from typing import Any

import httpx
from pydantic import SecretStr
from runnel_client import AsyncRunnelClient, RunnelClient

from entrypoints.auth.tokens import mint_token
from entrypoints.composition.settings import Settings
from entrypoints.http.app import create_asgi_app
from entrypoints.testing.asgi import InProcessApp
from entrypoints.testing.faces import AsyncFace, LoopThread, SyncFace

BASE_URL = "http://runnel.test"
"""What the clients' requests name as the server (`.test` resolves nowhere)."""
EVERY_SCOPE = ("streams:read", "streams:write", "streams:admin")


class InMemoryRunnel:
    """A Runnel node in this process, on the in-memory backend, from construction to
    `close()` (or the end of a `with` / `async with` block).

    `settings` are the node's `Settings` fields (`RUNNEL_*` variables apply too, as to
    `runnel serve`), except what makes it in-memory: storage, object store and wait
    service are `memory`, the token secret is fresh, and workers are off unless
    `workers=True` is given. Tokens are minted with `token()`: by default for tenant
    and subject `test`, with every scope."""

    def __init__(self, *, tenant: str = "test", subject: str = "test",
                 **settings: Any) -> None:
        self._secret = secrets.token_urlsafe(32)
        self.tenant = tenant
        self.subject = subject
        self.settings = Settings(**{"workers": False, **settings, "storage": "memory",
                                    "object_store": "memory", "wait_service": "memory",
                                    "jwt_secret": SecretStr(self._secret)})
        app = InProcessApp(create_asgi_app(self.settings))
        self._thread = LoopThread(name="in-memory-runnel")
        try:
            self._app = self._thread.hold(app.running())
        except BaseException:
            self._thread.close()
            raise

    def token(self, *, tenant: str | None = None, subject: str | None = None,
              scopes: Iterable[str] = EVERY_SCOPE, runs: Iterable[str] | None = None,
              ttl_seconds: int = 3600) -> str:
        """A token this node accepts (HS256 with its secret)."""
        return mint_token(self._secret, tenant=tenant or self.tenant,
                          sub=subject or self.subject, scopes=scopes, runs=runs,
                          ttl_seconds=ttl_seconds)

    def client(self, token: str | None = None, **options: Any) -> RunnelClient:
        """The SDK's sync client of this node (`options` go to `RunnelClient`)."""
        return RunnelClient(BASE_URL, token or self.token(), http=self.http(), **options)

    def async_client(self, token: str | None = None, **options: Any) -> AsyncRunnelClient:
        """The SDK's async client of this node, usable from any event loop."""
        return AsyncRunnelClient(BASE_URL, token or self.token(), http=self.async_http(),
                                 **options)

    def http(self, token: str | None = None) -> httpx.Client:
        """A raw sync HTTP client of this node (with `token` as its bearer, if given)."""
        return httpx.Client(base_url=BASE_URL, transport=SyncFace(self._thread, self._app),
                            headers=_bearer(token))

    def async_http(self, token: str | None = None) -> httpx.AsyncClient:
        """A raw async HTTP client of this node (with `token` as its bearer, if given)."""
        return httpx.AsyncClient(base_url=BASE_URL,
                                 transport=AsyncFace(self._thread, self._app),
                                 headers=_bearer(token))

    def close(self) -> None:
        """Stop the node: open subscriptions are cut, later requests fail to connect."""
        self._thread.close()

    def __enter__(self) -> InMemoryRunnel:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    async def __aenter__(self) -> InMemoryRunnel:
        return self

    async def __aexit__(self, kind: type[BaseException] | None, error: BaseException | None,
                        traceback: TracebackType | None) -> None:
        await asyncio.to_thread(self.close)


def _bearer(token: str | None) -> dict[str, str]:
    return {} if token is None else {"Authorization": f"Bearer {token}"}
