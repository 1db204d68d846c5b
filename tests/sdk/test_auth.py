"""Tokens in the SDK against a real server: a callable token (sync or async) asked for every
request and every reconnect, an expired token told apart from a bad one, and the backend's
helper that mints a scoped, short-lived read token for a browser."""

from __future__ import annotations

import asyncio
import json
import time

import httpx
import pytest
from runnel_client import (
    AsyncRunnelClient,
    FollowState,
    Record,
    RunnelClient,
    TokenExpired,
    Unauthenticated,
)

from entrypoints.auth.tokens import mint_token
from tests.http.server import SECRET, RunnelServer, bearer, token
from tests.http.support import GUARD_SECONDS
from tests.sdk.support import Collector

DEFINITION = {"stream_id": "s", "content_class": "output.text"}


def expired() -> str:
    """A token that expired well beyond the server's leeway."""
    return mint_token(SECRET, tenant="t1", sub="alice", scopes=["streams:read"],
                      ttl_seconds=60, now=time.time() - 3600)


async def test_a_sync_or_async_callable_token_is_asked_for_every_request(
        server: RunnelServer, run_id: str) -> None:
    calls: list[str] = []

    def sync_source() -> str:
        calls.append("sync")
        return token()

    async def async_source() -> str:
        calls.append("async")
        await asyncio.sleep(0)
        return token()

    async with AsyncRunnelClient(server.url, sync_source) as rn:
        await rn.create_stream(run_id, DEFINITION)
        await rn.append(run_id, "s", [{"payload": 1}])
    async with AsyncRunnelClient(server.url, async_source) as rn:
        assert [r.payload for r in (await rn.read(run_id, "s")).records] == [1]
        await rn.get_stream(run_id, "s")
    assert calls == ["sync", "sync", "async", "async"]


def test_the_sync_client_takes_a_sync_callable_and_refuses_an_async_one(
        server: RunnelServer, run_id: str) -> None:
    calls: list[int] = []

    def source() -> str:
        calls.append(1)
        return token()

    async def async_source() -> str:
        return token()

    with RunnelClient(server.url, source) as rn:
        rn.create_stream(run_id, DEFINITION)
        rn.get_stream(run_id, "s")
    assert len(calls) == 2
    with RunnelClient(server.url, async_source) as rn, pytest.raises(TypeError, match="async"):
        rn.get_stream(run_id, "s")


async def test_an_expired_token_is_told_apart_from_a_bad_one(server: RunnelServer,
                                                             run_id: str) -> None:
    async with AsyncRunnelClient(server.url, token()) as rn:
        await rn.create_stream(run_id, DEFINITION)
    async with AsyncRunnelClient(server.url, expired()) as rn:
        with pytest.raises(TokenExpired) as old:
            await rn.get_stream(run_id, "s")
    bad = token(secret="another secret of at least thirty-two bytes")
    async with AsyncRunnelClient(server.url, bad) as rn:
        with pytest.raises(Unauthenticated) as forged:
            await rn.get_stream(run_id, "s")
    async with AsyncRunnelClient(server.url, "not-a-jwt") as rn:
        with pytest.raises(Unauthenticated):
            await rn.get_stream(run_id, "s")
    assert (old.value.status, old.value.code, old.value.last_sequence) == (
        401, "token_expired", None)
    assert not isinstance(forged.value, TokenExpired)
    assert (forged.value.status, forged.value.code) == (401, "unauthenticated")


async def test_a_follow_with_an_expired_token_raises_token_expired_at_its_cursor(
        server: RunnelServer, run_id: str) -> None:
    async with AsyncRunnelClient(server.url, token()) as rn:
        await rn.create_stream(run_id, DEFINITION)
    async with AsyncRunnelClient(server.url, expired()) as rn:
        with pytest.raises(TokenExpired) as raised:
            async for _ in rn.follow(run_id, "s", after=0):
                pass
    assert raised.value.last_sequence == 0


async def test_a_follow_with_a_callable_token_renews_it_at_each_expiry(
        server: RunnelServer, run_id: str) -> None:
    minted: list[str] = []

    def short_lived() -> str:
        minted.append(token(ttl=2))
        return minted[-1]

    async with AsyncRunnelClient(server.url, token()) as owner, \
            AsyncRunnelClient(server.url, short_lived) as reader:
        await owner.create_stream(run_id, DEFINITION)
        await owner.append(run_id, "s", [{"payload": 1}])
        state = FollowState(0)
        follower = Collector(reader.follow(run_id, "s", state=state))
        try:
            await follower.wait_for(lambda items: len(items) >= 1)
            async with asyncio.timeout(GUARD_SECONDS):
                while state.token_refreshes < 1:
                    await asyncio.sleep(0.05)
            await owner.append(run_id, "s", [{"payload": 2}])
            await owner.close_stream(run_id, "s")
            items = await follower.finished()
        finally:
            await follower.stop()
    assert [item.sequence for item in items if isinstance(item, Record)] == [1, 2]
    assert state.duplicates == 0 and len(minted) >= 2


async def test_a_browser_token_follows_its_stream_only_and_writes_nothing(
        server: RunnelServer, run_id: str) -> None:
    async with AsyncRunnelClient(server.url, token()) as rn:
        stream = rn.stream(run_id, "s")
        await stream.create(DEFINITION)
        await rn.create_stream(run_id, {**DEFINITION, "stream_id": "other"})
        await stream.append([{"payload": "hello"}])
        await stream.close()
        grant = await stream.browser_token(ttl_seconds=30)
    assert grant.subscribe_url.startswith(f"{server.url}/api/workflow-streams/runs/{run_id}")
    async with httpx.AsyncClient(timeout=GUARD_SECONDS) as browser:  # no Authorization
        frames = (await browser.get(grant.subscribe_url)).text
        other = await browser.get(grant.subscribe_url.replace("/streams/s/", "/streams/other/"))
        write = await browser.post(
            f"{server.api}/runs/{run_id}/streams/s/records", headers=bearer(grant.token),
            json={"records": [{"payload": "from the browser"}]})
    data = [json.loads(line[5:]) for line in frames.splitlines() if line.startswith("data:")]
    assert data[0]["payload"] == "hello" and data[-1]["reason"] == "closed"
    assert other.status_code in (401, 403, 404) and "hello" not in other.text
    assert write.status_code in (401, 403)
