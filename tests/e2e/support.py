"""Helpers for the end-to-end tests: clients for several real nodes."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import httpx

from tests.http.server import RunnelServer, bearer, token


@asynccontextmanager
async def clients_of(first: RunnelServer, second: RunnelServer
                     ) -> AsyncIterator[tuple[httpx.AsyncClient, httpx.AsyncClient]]:
    """An API client for each of two nodes, with one default token."""
    async with httpx.AsyncClient(base_url=first.api, headers=bearer(token()), timeout=30) as a, \
            httpx.AsyncClient(base_url=second.api, headers=bearer(token()), timeout=30) as b:
        yield a, b
