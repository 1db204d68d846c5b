"""The app in process (Litestar's test client, in-memory storage): what a real server cannot
be made to show cheaply, such as a store that stops answering."""

from __future__ import annotations

import asyncio
from dataclasses import replace

from dependency_injector import providers
from litestar.testing import AsyncTestClient
from pydantic import SecretStr

from entrypoints.backend import Backend
from entrypoints.container import Container
from entrypoints.http import create_app
from entrypoints.settings import Settings
from tests.http.support import assert_problem


async def _unreachable() -> None:
    raise ConnectionRefusedError("store down")


async def test_readiness_is_503_when_the_store_does_not_answer() -> None:
    settings = Settings(storage="memory", jwt_secret=SecretStr("in-process-secret-0123456789abcd"),
                        workers=False)
    container = Container(settings=settings)
    async with AsyncTestClient(create_app(settings, container)) as client:
        assert (await client.get("/readyz")).status_code == 200
        backend: Backend = container.backend()
        with container.backend.override(providers.Object(replace(backend,
                                                                 probe=_unreachable))):
            response = await client.get("/readyz")
        body = assert_problem(response, 503, "not_ready")
        assert "ConnectionRefusedError" in body["detail"]
        assert (await client.get("/healthz")).status_code == 200


async def test_readiness_answers_within_its_bound_when_the_probe_hangs() -> None:
    settings = Settings(storage="memory", jwt_secret=SecretStr("in-process-secret-0123456789abcd"),
                        workers=False)
    container = Container(settings=settings)
    async with AsyncTestClient(create_app(settings, container)) as client:
        backend: Backend = container.backend()
        with container.backend.override(providers.Object(replace(backend, probe=_hang))):
            response = await asyncio.wait_for(client.get("/readyz"), 30)
        body = assert_problem(response, 503, "not_ready")
        assert "did not answer within 2 s" in body["detail"]


async def _hang() -> None:
    await asyncio.Event().wait()
