"""`follow()` against a real server: reconnects with Last-Event-ID across a server restart
and shows every record once, in order; resync after retention pruned the cursor."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import SecretStr
from runnel_client import AsyncRunnelClient, FollowState, Record, ResyncRequired, RunnelError
from runnel_client.errors import Unauthenticated
from runnel_client.following import Refused, StreamEnded, Unavailable, backoff

from domain.identifiers import StreamKey
from entrypoints.composition.container import NodeContainer, open_node
from entrypoints.composition.settings import Settings
from tests.http.restart import RestartableServer, restartable_server
from tests.http.server import SECRET, RunnelServer, token
from tests.sdk.support import Collector

PAYLOADS = [{"n": n} for n in range(1, 7)]


@pytest.fixture
def own_server(pg_template: str, tmp_path: Path) -> RestartableServer:  # type: ignore[misc]
    with restartable_server(pg_template, tmp_path) as server:
        yield server


def sequences(items: list[object]) -> list[int]:
    return [item.sequence for item in items if isinstance(item, Record)]


async def test_follow_resumes_after_a_server_restart_losing_and_repeating_nothing(
        own_server: RestartableServer, run_id: str) -> None:
    async with AsyncRunnelClient(own_server.url, token()) as client:
        await client.create_stream(run_id, {"stream_id": "s", "content_class": "output.text"})
        await client.append(run_id, "s", [{"payload": p} for p in PAYLOADS[:3]])
        state = FollowState(0)
        follower = Collector(client.follow(run_id, "s", state=state))
        try:
            await follower.wait_for(lambda items: len(items) >= 3)
            await asyncio.to_thread(own_server.restart)
            await client.append(run_id, "s", [{"payload": p} for p in PAYLOADS[3:]])
            await client.close_stream(run_id, "s")
            items = await follower.finished()
        finally:
            await follower.stop()
    assert sequences(items) == [1, 2, 3, 4, 5, 6]
    assert [item.payload for item in items if isinstance(item, Record)] == PAYLOADS
    assert state.reconnects >= 1
    assert (state.gaps, state.cursor) == (0, 6)


def test_the_follow_state_drops_repeats_and_counts_gaps() -> None:
    state = FollowState(0)

    def frame(sequence: int) -> str:
        return (f'{{"sequence": {sequence}, "content_type": "application/json", '
                f'"appended_at": "2026-01-01T00:00:00Z", "payload": {sequence}}}')

    shown = [state.accept("record", frame(n)) for n in (1, 2, 2, 1, 3, 5)]
    assert [item.sequence for item in shown if isinstance(item, Record)] == [1, 2, 3, 5]
    assert (state.duplicates, state.gaps, state.cursor) == (2, 1, 5)
    assert state.headers()["Last-Event-ID"] == "5"


async def prune(database: str, run_id: str) -> int:
    # No pruning worker runs in the test servers (--no-workers): a second, in-process node
    # on the same database applies the stream's retention, as a worker would.
    node = Settings(database_url=database, jwt_secret=SecretStr(SECRET), workers=False)
    async with open_node(NodeContainer(settings=node)) as opened:
        removed = await opened.service.retention.prune(StreamKey("t1", run_id, "s"))
    return int(removed.records)


async def test_a_pruned_cursor_raises_resync_or_calls_on_resync(
        server: RunnelServer, database: str, run_id: str) -> None:
    async with AsyncRunnelClient(server.url, token()) as client:
        await client.create_stream(run_id, {"stream_id": "s", "content_class": "output.text",
                                            "retention": {"max_records": 2}})
        await client.append(run_id, "s", [{"payload": n} for n in range(1, 6)])
        assert await prune(database, run_id) == 3
        await client.close_stream(run_id, "s")

        with pytest.raises(ResyncRequired) as raised:
            async for _ in client.follow(run_id, "s", after=1):
                pass
        assert (raised.value.status, raised.value.earliest) == (410, 4)

        resyncs: list[ResyncRequired] = []

        def on_resync(resync: ResyncRequired) -> int:
            resyncs.append(resync)
            return resync.earliest - 1

        items = [item async for item in client.follow(run_id, "s", after=0,
                                                       on_resync=on_resync)]
        assert sequences(items) == [4, 5]
        assert [resync.problem["requested"] for resync in resyncs] == [0]


async def test_other_refusals_are_raised_not_retried(server: RunnelServer,
                                                     run_id: str) -> None:
    async with AsyncRunnelClient(server.url, token()) as client:
        with pytest.raises(RunnelError) as raised:
            async for _ in client.follow(run_id, "ghost"):
                pass
    assert (raised.value.status, raised.value.code) == (404, "not_found")


def test_a_shutdown_end_frame_means_reconnect_not_the_end() -> None:
    state = FollowState(cursor=3)
    with pytest.raises(Unavailable):
        state.accept("end", '{"reason": "shutdown", "last_sequence": 3}')
    with pytest.raises(StreamEnded):
        state.accept("end", '{"reason": "closed", "last_sequence": 3}')


def test_a_token_revoked_end_frame_is_a_refusal_at_the_cursor_not_the_end() -> None:
    """A stream cut by a revocation (ADR 0060) is not closed: the caller learns why."""
    state = FollowState(cursor=3)
    with pytest.raises(Refused) as refused:
        state.accept("end", '{"reason": "token_revoked", "last_sequence": 3}')
    error = refused.value.error
    assert isinstance(error, Unauthenticated)
    assert (error.status, error.problem["reason"], error.problem["last_sequence"]) == (
        401, "token_revoked", 3)


@given(st.integers(min_value=0, max_value=50))
def test_reconnect_backoff_is_jittered_within_its_upper_half(attempt: int) -> None:
    ceiling = min(5.0, 0.1 * 2 ** min(attempt, 6))
    assert backoff(attempt, lambda low, high: low) == ceiling / 2
    assert backoff(attempt, lambda low, high: high) == ceiling
    assert ceiling / 2 <= backoff(attempt) <= ceiling
