"""Fixtures for the HTTP tests: real server processes, each on a fresh Postgres database
cloned from the session's migrated template.

A module tunes its server with a module-level `SERVER_ENV` dict of `RUNNEL_*`
variables; modules with the same `SERVER_ENV` share one server process for the
session (starting one costs seconds). Every test uses its own run id, so tests
sharing a server never meet.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Iterator, Mapping
from pathlib import Path

import httpx
import pytest
import pytest_asyncio

from tests.http.server import RunnelServer, bearer, token
from tests.pg import create_database, drop_database, pg_template, run_sync

__all__ = ["pg_template"]

DEFAULT_ENV = {"RUNNEL_KEEPALIVE_SECONDS": "1", "RUNNEL_STORAGE": "postgres"}


class ServerPool:
    """One server (and database) per distinct environment, stopped at the end of the session."""

    def __init__(self, template: str, data_root: Path) -> None:
        self._template = template
        self._data_root = data_root
        self._started: dict[tuple[tuple[str, str | None], ...], tuple[RunnelServer, str]] = {}

    def get(self, env: Mapping[str, str | None]) -> tuple[RunnelServer, str]:
        """`env` adds variables to the defaults; None removes one."""
        key = tuple(sorted(env.items(), key=lambda item: item[0]))
        if key not in self._started:
            dsn = run_sync(lambda: create_database(template=self._template,
                                                   prefix="runnel_http"))
            server = RunnelServer.start({**DEFAULT_ENV, "RUNNEL_DATABASE_URL": dsn, **env},
                                        self._data_root / f"server-{len(self._started)}")
            self._started[key] = (server, dsn)
        return self._started[key]

    def close(self) -> None:
        for server, dsn in self._started.values():
            server.stop()
            run_sync(lambda dsn=dsn: drop_database(dsn))  # type: ignore[misc]


@pytest.fixture(scope="session")
def servers(pg_template: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerPool]:
    pool = ServerPool(pg_template, tmp_path_factory.mktemp("runnel"))
    try:
        yield pool
    finally:
        pool.close()


def _module_env(request: pytest.FixtureRequest) -> Mapping[str, str]:
    env: Mapping[str, str] = getattr(request.module, "SERVER_ENV", {})
    return env


@pytest.fixture(scope="module")
def server(request: pytest.FixtureRequest, servers: ServerPool) -> RunnelServer:
    return servers.get(_module_env(request))[0]


@pytest.fixture(scope="module")
def database(request: pytest.FixtureRequest, servers: ServerPool) -> str:
    """The DSN of the module's server's database."""
    return servers.get(_module_env(request))[1]


@pytest.fixture
def run_id() -> str:
    return f"run-{uuid.uuid4().hex[:10]}"


@pytest_asyncio.fixture
async def api(server: RunnelServer) -> AsyncIterator[httpx.AsyncClient]:
    """A client below the API prefix, authenticated as alice (read + write) of tenant t1."""
    async with httpx.AsyncClient(base_url=server.api, headers=bearer(token()),
                                 timeout=30) as client:
        yield client
