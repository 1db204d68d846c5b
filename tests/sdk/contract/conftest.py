"""The contract suite runs each test twice: against `InMemoryRunnel` (the SDK's test double,
ADR 0038) and against a real `runnel serve` on Postgres. A `Target` gives a test what it
needs of either one: SDK clients, raw HTTP clients and tokens."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import httpx
import pytest
from runnel_client import AsyncRunnelClient, RunnelClient

from entrypoints.testing import InMemoryRunnel
from tests.http.server import RunnelServer, bearer, token
from tests.sdk.conftest import api, database, pg_template, run_id, server, servers

__all__ = ["api", "database", "pg_template", "run_id", "server", "servers"]

TENANT = "t1"
KEEPALIVE_SECONDS = 1.0
"""As the HTTP tests' servers have it (`RUNNEL_KEEPALIVE_SECONDS`)."""


API = "/api/workflow-streams"


@dataclass(frozen=True)
class Target:
    name: str
    mint: Callable[..., str]
    """A token (`tenant=`, `scopes=`, `ttl=`) the target accepts."""
    raw: Callable[[str], httpx.AsyncClient]
    """A raw HTTP client below the API prefix, with the given bearer token."""
    sdk: Callable[..., AsyncRunnelClient]
    """The SDK's async client (token, then client options)."""
    sync_sdk: Callable[..., RunnelClient]

    def async_http(self, token: str | None = None) -> httpx.AsyncClient:
        return self.raw(token or self.mint())

    def async_client(self, token: str | None = None, **options: Any) -> AsyncRunnelClient:
        return self.sdk(token or self.mint(), **options)

    def client(self, token: str | None = None, **options: Any) -> RunnelClient:
        return self.sync_sdk(token or self.mint(), **options)


def _scoped(mint: Callable[..., str]) -> Callable[..., str]:
    def scoped(tenant: str = TENANT,
               scopes: tuple[str, ...] = ("streams:read", "streams:write"),
               ttl: int = 3600) -> str:
        return mint(tenant, scopes, ttl)

    return scoped


@pytest.fixture(scope="session")
def in_memory() -> Iterator[InMemoryRunnel]:
    with InMemoryRunnel(tenant=TENANT, keepalive_seconds=KEEPALIVE_SECONDS) as node:
        yield node


def in_memory_target(node: InMemoryRunnel) -> Target:
    def raw(bearer_token: str) -> httpx.AsyncClient:
        http = node.async_http(bearer_token)
        http.base_url = http.base_url.join(API)
        return http

    return Target(
        "in_memory",
        _scoped(lambda tenant, scopes, ttl: node.token(tenant=tenant, subject="alice",
                                                        scopes=scopes, ttl_seconds=ttl)),
        raw, node.async_client, node.client)


def server_target(server: RunnelServer) -> Target:
    def raw(bearer_token: str) -> httpx.AsyncClient:
        return httpx.AsyncClient(base_url=server.api, headers=bearer(bearer_token),
                                 timeout=30)

    return Target(
        "server",
        _scoped(lambda tenant, scopes, ttl: token(tenant=tenant, sub="alice", scopes=scopes,
                                                  ttl=ttl)),
        raw, lambda tok, **options: AsyncRunnelClient(server.url, tok, **options),
        lambda tok, **options: RunnelClient(server.url, tok, **options))


@pytest.fixture(params=["in_memory", "server"])
def target(request: pytest.FixtureRequest) -> Target:
    if request.param == "in_memory":
        return in_memory_target(request.getfixturevalue("in_memory"))
    return server_target(request.getfixturevalue("server"))
