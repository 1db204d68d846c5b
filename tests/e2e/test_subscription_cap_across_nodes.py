"""The per-principal subscription cap holds across `runnel serve` processes sharing one
Postgres (SPEC §10, ADR 0018): slots are leases in the database, so a principal at the cap
on one node is refused on another, and a node that crashes gives its slots back once
their leases lapse."""

from __future__ import annotations

import asyncio
from contextlib import AsyncExitStack

import httpx
import pytest

from tests.http.server import RunnelServer, bearer, running_server, token
from tests.http.support import assert_problem, create_stream, wait_for_metric

CAP = 2
LEASE_SECONDS = 30.0
"""The pair's lease: far longer than any test waits, so a slot that comes back in time was
released, not lapsed."""
SHORT_LEASE_SECONDS = 2.0
"""The crashing node's lease: how long its slots may outlive it."""
ENV = {"RUNNEL_STORAGE": "postgres", "RUNNEL_KEEPALIVE_SECONDS": "1",
       "RUNNEL_MAX_SUBSCRIPTIONS_PER_PRINCIPAL": str(CAP),
       "RUNNEL_SUBSCRIPTION_LEASE_SECONDS": str(LEASE_SECONDS)}


@pytest.fixture(scope="module")
def node_env() -> tuple[dict[str, str], dict[str, str]]:
    return ENV, ENV


async def refusal(client: httpx.AsyncClient, url: str) -> httpx.Response | None:
    """One subscribe attempt: the refusal, read whole, or None when it was accepted (the
    stream is closed at once: its body never ends)."""
    async with client.stream("GET", url) as response:
        if response.status_code == 200:
            return None
        await response.aread()
        return response


async def subscribe_until_accepted(client: httpx.AsyncClient, url: str, guard: float) -> None:
    """Poll `url` until a subscription is accepted (fails the test after `guard` seconds)."""
    async with asyncio.timeout(guard):
        while True:
            refused = await refusal(client, url)
            if refused is None:
                return
            assert_problem(refused, 429, "too_many_subscriptions")
            await asyncio.sleep(0.1)


async def test_a_principal_at_the_cap_on_one_node_is_refused_on_the_other(
        pair: tuple[RunnelServer, RunnelServer],
        clients: tuple[httpx.AsyncClient, httpx.AsyncClient], run_id: str) -> None:
    a, _ = pair
    on_a, on_b = clients
    await create_stream(on_a, run_id)
    url = f"/runs/{run_id}/streams/s/subscribe"
    async with AsyncExitStack() as held:
        for _ in range(CAP):
            response = await held.enter_async_context(on_a.stream("GET", url))
            assert response.status_code == 200
        await wait_for_metric(a.url, "runnel_sse_readers", lambda v: v == CAP)

        refused = await refusal(on_b, url)
        assert refused is not None, "node B accepted a subscription past the cap"
        body = assert_problem(refused, 429, "too_many_subscriptions")
        assert body["limit"] == CAP
        assert int(refused.headers["retry-after"]) >= 1
        # The cap is per principal: bob subscribes on either node.
        async with on_b.stream("GET", url, headers=bearer(token(sub="bob"))) as bobs:
            assert bobs.status_code == 200
    # Alice's clients on A went away: A gives the slots back, and B accepts her again.
    await wait_for_metric(a.url, "runnel_sse_readers", lambda v: v == 0)
    await subscribe_until_accepted(on_b, url, guard=5.0)


async def test_the_slots_of_a_crashed_node_come_back_when_their_leases_lapse(
        database: str, pair: tuple[RunnelServer, RunnelServer],
        clients: tuple[httpx.AsyncClient, httpx.AsyncClient], run_id: str,
        tmp_path_factory: pytest.TempPathFactory) -> None:
    _, on_b = clients
    await create_stream(on_b, run_id)
    url = f"/runs/{run_id}/streams/s/subscribe"
    carol = bearer(token(sub="carol"))
    env = {**ENV, "RUNNEL_DATABASE_URL": database,
           "RUNNEL_SUBSCRIPTION_LEASE_SECONDS": str(SHORT_LEASE_SECONDS)}
    with running_server(env, tmp_path_factory.mktemp("doomed")) as doomed:
        async with httpx.AsyncClient(base_url=doomed.api, headers=carol, timeout=30) as on_c, \
                AsyncExitStack() as held:
            for _ in range(CAP):
                response = await held.enter_async_context(on_c.stream("GET", url))
                assert response.status_code == 200
            # The node dies with both slots held: nothing releases them.
            doomed.process.kill()
            doomed.process.wait()
    on_b.headers.update(carol)
    refused = await refusal(on_b, url)
    assert refused is not None, "the crashed node's slots were free at once"
    assert_problem(refused, 429, "too_many_subscriptions")
    # Within the lease (plus polling slack), not the pair's thirty seconds.
    await subscribe_until_accepted(on_b, url, guard=SHORT_LEASE_SECONDS * 3)
