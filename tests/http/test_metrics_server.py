"""The worker's metrics port answers GET /metrics and /healthz, refuses other methods,
and closes a connection whose head is too large without buffering it."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest

from entrypoints.observability.metrics_server import MAX_HEAD_BYTES, BoundPort, bind_metrics_port


@pytest.fixture
async def port() -> AsyncIterator[BoundPort]:
    async def scrape() -> tuple[bytes, str]:
        return b"runnel_up 1\n", "text/plain; version=0.0.4"

    bound = await bind_metrics_port(scrape, "127.0.0.1", 0)
    await bound.serve()
    try:
        yield bound
    finally:
        await bound.close()


async def exchange(port: BoundPort, request: bytes) -> bytes:
    host, number = port.url.removeprefix("http://").split(":")
    reader, writer = await asyncio.open_connection(host, int(number))
    try:
        writer.write(request)
        await writer.drain()
        return await asyncio.wait_for(reader.read(), 30)
    except ConnectionResetError:  # closed with our bytes unread: the kernel resets
        return b""
    finally:
        writer.close()


async def test_metrics_and_health_are_served_and_the_connection_closed(port: BoundPort) -> None:
    answer = await exchange(port, b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
    assert answer.startswith(b"HTTP/1.1 200 OK\r\n")
    assert b"Connection: close" in answer and answer.endswith(b"runnel_up 1\n")
    health = await exchange(port, b"GET /healthz HTTP/1.1\r\n\r\n")
    assert health.startswith(b"HTTP/1.1 200 OK") and health.endswith(b'{"status":"ok"}')


async def test_other_methods_and_paths_are_refused(port: BoundPort) -> None:
    assert (await exchange(port, b"POST /metrics HTTP/1.1\r\n\r\n")).startswith(
        b"HTTP/1.1 405")
    assert (await exchange(port, b"GET /api HTTP/1.1\r\n\r\n")).startswith(b"HTTP/1.1 404")


async def test_a_head_past_the_limit_is_closed_without_an_answer(port: BoundPort) -> None:
    huge = b"GET /metrics HTTP/1.1\r\nX: " + b"a" * (2 * MAX_HEAD_BYTES) + b"\r\n\r\n"
    assert await exchange(port, huge) == b""
