"""End-to-end fixtures: several real server processes on one fresh Postgres database."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Iterator

import httpx
import pytest
import pytest_asyncio

from tests.e2e.support import clients_of, two_nodes
from tests.http.server import RunnelServer
from tests.pg import create_database, drop_database, pg_template, run_sync

__all__ = ["pg_template"]


@pytest.fixture(scope="module")
def database(pg_template: str) -> Iterator[str]:
    """A fresh database for the module's servers, dropped afterwards."""
    dsn = run_sync(lambda: create_database(template=pg_template, prefix="runnel_e2e"))
    try:
        yield dsn
    finally:
        run_sync(lambda: drop_database(dsn))


@pytest.fixture
def run_id() -> str:
    return f"run-{uuid.uuid4().hex[:10]}"


@pytest.fixture(scope="module")
def node_env() -> tuple[dict[str, str], dict[str, str]]:
    """The extra environment of each of `pair`'s servers; a module overrides it."""
    return {}, {}


@pytest.fixture(scope="module")
def pair(database: str, tmp_path_factory: pytest.TempPathFactory,
         node_env: tuple[dict[str, str], dict[str, str]]
         ) -> Iterator[tuple[RunnelServer, RunnelServer]]:
    """Two `runnel serve` processes on the module's database, for the whole module."""
    with two_nodes(database, tmp_path_factory, *node_env) as both:
        yield both


@pytest_asyncio.fixture
async def clients(pair: tuple[RunnelServer, RunnelServer]
                  ) -> AsyncIterator[tuple[httpx.AsyncClient, httpx.AsyncClient]]:
    """An API client for each server of `pair`, with one default token."""
    async with clients_of(*pair) as both:
        yield both

