"""A facade SSE connection over a real server (ADR 0071): a reader that takes nothing while
megabytes are appended then gets every message once, in order; a connection holds one of
its principal's subscription slots for its life and gives it back however it ends; and it
ends while it waits once its token expires."""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import httpx
import pytest

from entrypoints.http.durable_streams.sse import RECONNECT_SECONDS
from tests.http.server import RunnelServer, bearer, token
from tests.pg import create_database, drop_database, pg_template, run_sync  # noqa: F401

TENANT = "ds-live"
TEXT = {"content-type": "text/plain"}
DEADLINE_SECONDS = 60


@pytest.fixture(scope="module")
def server(pg_template: str, tmp_path_factory: pytest.TempPathFactory,  # noqa: F811
           ) -> Iterator[RunnelServer]:
    dsn = run_sync(lambda: create_database(template=pg_template, prefix="runnel_ds_live"))
    running = RunnelServer.start({"RUNNEL_DATABASE_URL": dsn,
                                  "RUNNEL_MAX_SUBSCRIPTIONS_PER_PRINCIPAL": "2"},
                                 Path(tmp_path_factory.mktemp("ds-live")))
    try:
        yield running
    finally:
        running.stop()
        run_sync(lambda: drop_database(dsn))


def url_of(server: RunnelServer, path: str) -> str:
    return f"{server.url}/v1/stream/{path}"


async def open_sse(server: RunnelServer, path: str, auth: str) -> tuple[
        bytes, asyncio.StreamReader, asyncio.StreamWriter]:
    """A raw SSE request; the response head, and the connection, left unread."""
    url = urlsplit(url_of(server, path))
    reader, writer = await asyncio.open_connection(url.hostname, url.port)
    writer.write(f"GET {url.path}?offset=-1&live=sse HTTP/1.1\r\nHost: {url.netloc}\r\n"
                 f"Authorization: Bearer {auth}\r\n\r\n".encode())
    head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), DEADLINE_SECONDS)
    return head, reader, writer


async def read_messages(reader: asyncio.StreamReader, count: int) -> list[object]:
    """The JSON messages of the `event: data` events, through the chunked body, until
    `count` have come."""
    body, got = b"", []
    while len(got) < count:
        size = int((await asyncio.wait_for(reader.readuntil(b"\r\n"), DEADLINE_SECONDS))
                   .split(b";")[0], 16)
        assert size, "the stream ended early"
        body += (await asyncio.wait_for(reader.readexactly(size + 2), DEADLINE_SECONDS))[:-2]
        *events, body = body.split(b"\n\n")
        for event in events:
            if event.startswith(b"event: data\n"):
                got += json.loads(b"".join(line[5:] for line in event.split(b"\n")[1:]))
    return got


async def test_a_reader_that_takes_nothing_for_a_while_gets_every_message_once(
        server: RunnelServer) -> None:
    path = f"slow-{uuid.uuid4().hex[:8]}"
    auth = token(tenant=TENANT, sub="slow")
    headers = {**bearer(auth), "content-type": "application/json"}
    assert httpx.put(url_of(server, path), headers=headers).status_code == 201
    head, reader, writer = await open_sse(server, path, auth)
    assert head.startswith(b"HTTP/1.1 200")
    sent = [{"n": n, "pad": "x" * 1000} for n in range(4000)]  # 4 MB: past the socket buffers
    async with httpx.AsyncClient(headers=headers, timeout=DEADLINE_SECONDS) as client:
        for start in range(0, len(sent), 50):
            answer = await client.post(url_of(server, path),
                                       content=json.dumps(sent[start:start + 50]))
            assert answer.status_code == 204
    assert await read_messages(reader, len(sent)) == sent
    writer.close()


async def test_a_connection_holds_one_slot_and_gives_it_back_when_the_client_leaves(
        server: RunnelServer) -> None:
    path = f"slots-{uuid.uuid4().hex[:8]}"
    auth = token(tenant=TENANT, sub="slots")
    assert httpx.put(url_of(server, path), headers={**bearer(auth), **TEXT}).status_code == 201
    first = await open_sse(server, path, auth)
    second = await open_sse(server, path, auth)
    assert first[0].startswith(b"HTTP/1.1 200") and second[0].startswith(b"HTTP/1.1 200")
    refused, _, third = await open_sse(server, path, auth)
    assert refused.startswith(b"HTTP/1.1 429"), refused
    third.close()
    first[2].close()  # the client leaves without reading: the slot comes back
    async with asyncio.timeout(DEADLINE_SECONDS):
        while True:
            head, _, writer = await open_sse(server, path, auth)
            writer.close()
            if head.startswith(b"HTTP/1.1 200"):
                break
            await asyncio.sleep(0.2)
    second[2].close()


async def test_a_waiting_connection_ends_when_its_token_expires(server: RunnelServer) -> None:
    path = f"expiry-{uuid.uuid4().hex[:8]}"
    writer_auth = token(tenant=TENANT, sub="expiry")
    assert httpx.put(url_of(server, path), content="a",
                     headers={**bearer(writer_auth), **TEXT}).status_code == 201
    short = token(tenant=TENANT, sub="expiry", ttl=3)
    started = time.monotonic()
    async with httpx.AsyncClient(headers=bearer(short), timeout=DEADLINE_SECONDS) as client, \
            asyncio.timeout(DEADLINE_SECONDS), client.stream(
                "GET", url_of(server, path), params={"offset": "-1", "live": "sse"}) as events:
        assert events.status_code == 200
        body = b"".join([chunk async for chunk in events.aiter_bytes()])
    assert b"event: data" in body and body.endswith(b"\n\n")  # served, then ended
    # Well before the connection's periodic end (RECONNECT_SECONDS); the reconnect is
    # refused once the verifier's leeway is over (tests/http/test_security_revocation.py).
    assert time.monotonic() - started < RECONNECT_SECONDS / 2
