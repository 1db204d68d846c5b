"""The app in process (Litestar's test client, in-memory storage): what a real server cannot
be made to show cheaply, such as a store that stops answering."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import replace

import pytest
from litestar.testing import AsyncTestClient
from pydantic import SecretStr

from adapters.memory.store import MemoryStreamStore
from entrypoints.composition.container import Node, NodeHost
from entrypoints.composition.settings import Settings
from entrypoints.http.app import create_app
from tests.http.support import assert_problem


async def _unreachable() -> None:
    raise ConnectionRefusedError("store down")


async def test_readiness_is_503_when_the_store_does_not_answer() -> None:
    settings = Settings(storage="memory", jwt_secret=SecretStr("in-process-secret-0123456789abcd"),
                        workers=False)
    host = NodeHost(settings)
    async with AsyncTestClient(create_app(settings, host)) as client:
        assert (await client.get("/readyz")).status_code == 200
        with host.swap(lambda node: probing(node, _unreachable)):
            response = await client.get("/readyz")
        body = assert_problem(response, 503, "not_ready")
        assert "ConnectionRefusedError" in body["detail"]
        assert (await client.get("/healthz")).status_code == 200
        assert (await client.get("/readyz")).status_code == 200  # the swap ended with its block


async def test_a_host_has_no_node_before_it_runs_nor_after() -> None:
    settings = Settings(storage="memory", jwt_secret=SecretStr("in-process-secret-0123456789abcd"),
                        workers=False)
    host = NodeHost(settings)
    with pytest.raises(RuntimeError, match="not running"):
        host.node  # noqa: B018
    async with AsyncTestClient(create_app(settings, host)) as client:
        assert (await client.get("/readyz")).status_code == 200
        running = host.node
    with pytest.raises(RuntimeError, match="not running"):
        host.node  # noqa: B018
    assert isinstance(running.backend.store, MemoryStreamStore)  # the one memory wiring's


async def test_readiness_answers_within_its_bound_when_the_probe_hangs() -> None:
    settings = Settings(storage="memory", jwt_secret=SecretStr("in-process-secret-0123456789abcd"),
                        workers=False)
    host = NodeHost(settings)
    async with AsyncTestClient(create_app(settings, host)) as client:
        with host.swap(lambda node: probing(node, _hang)):
            response = await asyncio.wait_for(client.get("/readyz"), 30)
        body = assert_problem(response, 503, "not_ready")
        assert "did not answer within 2 s" in body["detail"]


def probing(node: Node, probe: Callable[[], Awaitable[None]]) -> Node:
    return replace(node, backend=replace(node.backend, probe=probe))


async def _hang() -> None:
    await asyncio.Event().wait()
