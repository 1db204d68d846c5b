"""Helpers for the end-to-end tests: clients for several real nodes."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator, Mapping
from contextlib import asynccontextmanager, contextmanager

import httpx
import pytest

from tests.http.server import RunnelServer, bearer, running_server, token


@contextmanager
def two_nodes(database: str, tmp_path_factory: pytest.TempPathFactory,
              first: Mapping[str, str], second: Mapping[str, str]
              ) -> Iterator[tuple[RunnelServer, RunnelServer]]:
    """Two `runnel serve` processes on one Postgres database, each with its own extra env."""
    env = {"RUNNEL_DATABASE_URL": database, "RUNNEL_STORAGE": "postgres"}
    with running_server({**env, **first}, tmp_path_factory.mktemp("node")) as a, \
            running_server({**env, **second}, tmp_path_factory.mktemp("node")) as b:
        yield a, b


@asynccontextmanager
async def clients_of(first: RunnelServer, second: RunnelServer
                     ) -> AsyncIterator[tuple[httpx.AsyncClient, httpx.AsyncClient]]:
    """An API client for each of two nodes, with one default token."""
    async with httpx.AsyncClient(base_url=first.api, headers=bearer(token()), timeout=30) as a, \
            httpx.AsyncClient(base_url=second.api, headers=bearer(token()), timeout=30) as b:
        yield a, b
