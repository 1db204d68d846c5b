"""`follow()` across token expiries, against a real server (ADR 0023): the server ends the
subscription when its token expires; a follower with a token provider takes a fresh one and
resumes from its cursor, losing and repeating nothing; without one it raises `TokenExpired`."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest
from runnel_client import (
    AsyncRunnelClient,
    FollowState,
    Record,
    RunnelClient,
    RunnelError,
    TokenExpired,
)

from tests.http.server import RunnelServer, token
from tests.http.support import GUARD_SECONDS
from tests.sdk.support import Collector

SHORT_TTL = 2


def sequences(items: list[object]) -> list[int]:
    return [item.sequence for item in items if isinstance(item, Record)]


async def test_follow_with_subscribe_tokens_crosses_expiries_losing_nothing(
        server: RunnelServer, run_id: str) -> None:
    async with AsyncRunnelClient(server.url, token()) as client:
        await client.create_stream(run_id, {"stream_id": "s", "content_class": "output.text"})
        await client.append(run_id, "s", [{"payload": n} for n in range(1, 4)])
        minted: list[str] = []

        async def provider() -> str:
            minted.append((await client.subscribe_token(run_id, "s",
                                                        ttl_seconds=SHORT_TTL))["token"])
            return minted[-1]

        state = FollowState(0)
        follower = Collector(client.follow(run_id, "s", state=state, token_provider=provider))
        try:
            await follower.wait_for(lambda items: len(items) >= 3)
            for n in range(4, 10):  # spread over more than two token lifetimes
                await client.append(run_id, "s", [{"payload": n}])
                await asyncio.sleep(0.8)
            async with asyncio.timeout(GUARD_SECONDS):
                while state.token_refreshes < 2:
                    await asyncio.sleep(0.05)
            await client.append(run_id, "s", [{"payload": 10}])
            await client.close_stream(run_id, "s")
            items = await follower.finished()
        finally:
            await follower.stop()
    assert sequences(items) == list(range(1, 11))
    assert [item.payload for item in items if isinstance(item, Record)] == list(range(1, 11))
    assert (state.duplicates, state.gaps, state.cursor) == (0, 0, 10)
    assert state.token_refreshes >= 2 and len(minted) == state.token_refreshes + 1


def test_the_sync_follower_renews_short_api_tokens(server: RunnelServer, run_id: str) -> None:
    state = FollowState(0)

    def produce_after_a_renewal() -> None:
        with RunnelClient(server.url, token()) as producer:
            deadline = time.monotonic() + GUARD_SECONDS
            while state.token_refreshes < 1 and time.monotonic() < deadline:
                time.sleep(0.05)
            producer.append(run_id, "s", [{"payload": 2}])
            producer.close_stream(run_id, "s")

    with RunnelClient(server.url, token()) as client:
        client.create_stream(run_id, {"stream_id": "s", "content_class": "output.text"})
        client.append(run_id, "s", [{"payload": 1}])
        producer = threading.Thread(target=produce_after_a_renewal)
        producer.start()
        seen = [item.sequence for item in client.follow(
            run_id, "s", state=state, token_provider=lambda: token(ttl=SHORT_TTL))
            if isinstance(item, Record)]
        producer.join()
    assert seen == [1, 2]
    assert state.token_refreshes >= 1 and state.duplicates == 0


async def test_without_a_provider_an_expiry_raises_token_expired_at_the_cursor(
        server: RunnelServer, run_id: str) -> None:
    async with AsyncRunnelClient(server.url, token()) as owner:
        await owner.create_stream(run_id, {"stream_id": "s", "content_class": "output.text"})
        await owner.append(run_id, "s", [{"payload": 1}, {"payload": 2}])
    seen: list[int] = []
    async with AsyncRunnelClient(server.url, token(ttl=SHORT_TTL)) as reader:
        with pytest.raises(TokenExpired) as expired:
            async with asyncio.timeout(30):
                async for item in reader.follow(run_id, "s"):
                    assert isinstance(item, Record)
                    seen.append(item.sequence)
    assert seen == [1, 2]
    assert (expired.value.last_sequence, expired.value.code) == (2, "token_expired")


async def test_a_provider_whose_fresh_token_is_refused_raises(
        server: RunnelServer, run_id: str) -> None:
    async with AsyncRunnelClient(server.url, token()) as client:
        await client.create_stream(run_id, {"stream_id": "s", "content_class": "output.text"})
        with pytest.raises(RunnelError) as refused:
            async with asyncio.timeout(30):
                async for _ in client.follow(run_id, "s", token_provider=lambda: "not-a-jwt"):
                    pass
    assert (refused.value.status, refused.value.code) == (401, "unauthenticated")
