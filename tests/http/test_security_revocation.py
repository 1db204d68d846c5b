"""Revocation reaches subscribe tokens and open streams (ADR 0060), over a real server on
Postgres: a subscribe token records the API token it was minted from, either revoked id
refuses it, and a subscription already open ends with `event: end` `{"reason":
"token_revoked"}` within the revocation bound, whether it was opened with a header token
or a subscribe token. A subscribe token mints nothing."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from typing import Any

import asyncpg
import httpx
import jwt
import pytest

from adapters.postgres.revoked_tokens import PostgresRevokedTokens
from application.ports.access import Revocation
from tests.http.conftest import ServerPool
from tests.http.server import RunnelServer, bearer, token
from tests.http.support import (
    append,
    assert_problem,
    create_stream,
    has_event,
    read_events,
    records_of,
)

DEADLINE_SECONDS = 30.0


def jti_of(value: str) -> str:
    claims: dict[str, Any] = jwt.decode(value, options={"verify_signature": False})
    return str(claims["jti"])


async def revoke(database: str, token_id: str, tenant: str | None = "t1") -> None:
    """What `runnel revoke` does (tests/e2e/test_revocation_two_nodes.py runs the CLI)."""
    now = datetime.now(UTC)
    async with asyncpg.create_pool(database, min_size=1, max_size=1) as pool:
        await PostgresRevokedTokens(pool).revoke(
            Revocation(token_id, tenant, now + timedelta(hours=1)), now)


async def mint(parent: str, server: RunnelServer, run_id: str) -> str:
    async with httpx.AsyncClient(base_url=server.api, headers=bearer(parent)) as client:
        response = await client.post(f"/runs/{run_id}/streams/s/subscribe-token")
    assert response.status_code == 201, response.text
    minted: str = response.json()["token"]
    return minted


async def refused_within_deadline(server: RunnelServer, run_id: str,
                                  **request: Any) -> httpx.Response:
    url = f"/runs/{run_id}/streams/s/subscribe"
    async with httpx.AsyncClient(base_url=server.api) as client, \
            asyncio.timeout(DEADLINE_SECONDS):
        while True:
            async with client.stream("GET", url, **request) as response:
                if response.status_code != 200:
                    await response.aread()
                    return response
            await asyncio.sleep(0.05)


async def test_a_subscribe_token_is_refused_once_its_parent_is_revoked(
        api: httpx.AsyncClient, server: RunnelServer, database: str, run_id: str) -> None:
    await create_stream(api, run_id)
    await api.post(f"/runs/{run_id}/streams/s/close")
    parent, sibling = token(), token()
    child, cousin = await mint(parent, server, run_id), await mint(sibling, server, run_id)
    assert jwt.decode(child, options={"verify_signature": False})["pjt"] == jti_of(parent)
    await revoke(database, jti_of(parent))
    for request in ({"params": {"access_token": child}}, {"headers": bearer(child)}):
        refused = await refused_within_deadline(server, run_id, **request)
        problem = assert_problem(refused, 401, "unauthenticated")
        assert problem["detail"] == "token has been revoked"
    async with httpx.AsyncClient(timeout=30) as client:  # another parent's child is kept
        events = await read_events(client, f"{server.api}/runs/{run_id}/streams/s/subscribe",
                                   params={"access_token": cousin}, until=has_event("end"))
    assert events[-1].json() == {"reason": "closed", "last_sequence": 0}


async def test_a_subscribe_token_revoked_by_its_own_jti_is_refused(
        api: httpx.AsyncClient, server: RunnelServer, database: str, run_id: str) -> None:
    await create_stream(api, run_id)
    child = await mint(token(), server, run_id)
    await revoke(database, jti_of(child), tenant=None)
    refused = await refused_within_deadline(server, run_id, params={"access_token": child})
    assert assert_problem(refused, 401, "unauthenticated")["detail"] == "token has been revoked"


@pytest.mark.parametrize("credential", ["subscribe token", "header token"])
async def test_an_open_subscription_ends_when_its_token_is_revoked(
        api: httpx.AsyncClient, server: RunnelServer, database: str, run_id: str,
        credential: str) -> None:
    await create_stream(api, run_id)
    await append(api, run_id, "s", ["a", "b"])
    parent = token()
    if credential == "subscribe token":
        request: dict[str, Any] = {"params": {"access_token": await mint(parent, server,
                                                                          run_id)}}
    else:
        request = {"headers": bearer(parent)}
    started = asyncio.get_running_loop().time()
    async with httpx.AsyncClient(timeout=60) as client:
        events = await read_events(
            client, f"{server.api}/runs/{run_id}/streams/s/subscribe", **request,
            until=has_event("end"), on_open=lambda: revoke(database, jti_of(parent)))
    took = asyncio.get_running_loop().time() - started
    assert records_of(events) == [1, 2]
    assert (events[-1].event, events[-1].json()) == (
        "end", {"reason": "token_revoked", "last_sequence": 2})
    assert took < DEADLINE_SECONDS  # the keepalive (15 s) and the token (1 h) are far off
    print(f"{credential}: token_revoked end frame {took:.3f} s after subscribing")


async def test_a_subscribe_token_mints_no_subscribe_token(
        api: httpx.AsyncClient, server: RunnelServer, run_id: str) -> None:
    await create_stream(api, run_id)
    child = await mint(token(), server, run_id)
    async with httpx.AsyncClient(base_url=server.api, headers=bearer(child)) as client:
        refused = await client.post(f"/runs/{run_id}/streams/s/subscribe-token")
    assert_problem(refused, 401, "unauthenticated")


async def test_a_facade_event_stream_ends_when_its_token_is_revoked(
        servers: ServerPool, run_id: str) -> None:
    """The protocol has no `end` frame: the connection ends before its next wait (one
    long-poll interval at most), and the reconnect is refused."""
    server, database = servers.get({"RUNNEL_DURABLE_STREAMS_LONG_POLL_SECONDS": "1"})
    doomed = token()
    url = f"{server.url}/v1/stream/{run_id}"
    async with httpx.AsyncClient(headers=bearer(doomed), timeout=60) as client:
        assert (await client.put(url, content="a", headers={
            "Content-Type": "text/plain"})).status_code == 201
        async with asyncio.timeout(DEADLINE_SECONDS), client.stream(
                "GET", url, params={"offset": "-1", "live": "sse"}) as events:
            assert events.status_code == 200
            await revoke(database, jti_of(doomed))
            body = b"".join([chunk async for chunk in events.aiter_bytes()])
        assert b"event: data" in body  # served until the revocation, then ended
        again = await client.get(url, params={"offset": "-1", "live": "sse"})
    assert_problem(again, 401, "unauthenticated")
