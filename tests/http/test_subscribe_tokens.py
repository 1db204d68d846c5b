"""Subscribe tokens (SPEC §12, ADR 0023) over a real server: minted only for a reader of the
stream, read-only and bound to it, at most 5 minutes; `?access_token=` takes nothing else; a
subscription ends at its token's expiry and resumes with a fresh one, losing and repeating
nothing; no problem detail echoes a token; every response says `Referrer-Policy`."""

from __future__ import annotations

import time
from datetime import datetime
from typing import Any

import httpx
import pytest

from entrypoints.auth.subscribe_tokens import SubscribeTokens
from entrypoints.auth.tokens import verify_token
from tests.http.server import SECRET, RunnelServer, bearer, token
from tests.http.support import (
    append,
    assert_problem,
    create_stream,
    has_event,
    read_events,
    records_of,
)

EXPIRY_SLACK_SECONDS = 2


async def mint(api: httpx.AsyncClient, run_id: str, stream_id: str = "s",
               **body: Any) -> dict[str, Any]:
    response = await api.post(f"/runs/{run_id}/streams/{stream_id}/subscribe-token",
                              json=body or None)
    assert response.status_code == 201, response.text
    minted: dict[str, Any] = response.json()
    return minted


def lifetime(minted: dict[str, Any]) -> float:
    return datetime.fromisoformat(minted["expires_at"]).timestamp() - time.time()


async def test_a_subscribe_token_is_201_and_lives_60_seconds_at_most_300(
        api: httpx.AsyncClient, run_id: str) -> None:
    await create_stream(api, run_id)
    default = await mint(api, run_id)
    assert set(default) == {"token", "expires_at"}
    assert 60 - EXPIRY_SLACK_SECONDS <= lifetime(default) <= 60
    longest = await mint(api, run_id, ttl_seconds=300)
    assert 300 - EXPIRY_SLACK_SECONDS <= lifetime(longest) <= 300
    assert lifetime(await mint(api, run_id, ttl_seconds=1)) <= 1
    for body in ({"ttl_seconds": 0}, {"ttl_seconds": 301}, {"ttl_seconds": -5},
                 {"ttl_seconds": True}, {"ttl_seconds": 1.5}, {"ttl_seconds": None},
                 {"ttl": 10}, [1]):
        refused = await api.post(f"/runs/{run_id}/streams/s/subscribe-token", json=body)
        assert_problem(refused, 400, "invalid_request")


async def test_a_subscribe_token_never_outlives_the_callers_token(
        server: RunnelServer, run_id: str) -> None:
    async with httpx.AsyncClient(base_url=server.api, headers=bearer(token(ttl=20))) as api:
        await create_stream(api, run_id)
        minted = await mint(api, run_id, ttl_seconds=300)
    assert lifetime(minted) <= 20


async def test_only_a_reader_of_the_stream_may_mint_one(
        api: httpx.AsyncClient, run_id: str) -> None:
    await create_stream(api, run_id)
    await create_stream(api, run_id, "bobs", authorization={"readers": ["bob"],
                                                            "writers": ["*"]})
    path = f"/runs/{run_id}/streams/{{}}/subscribe-token"
    writer = bearer(token(scopes=("streams:write",)))
    assert_problem(await api.post(path.format("s"), headers=writer), 403, "forbidden")
    assert_problem(await api.post(path.format("bobs")), 403, "forbidden")
    admin = bearer(token(scopes=("streams:admin",)))  # manages, but reads no pinned content
    assert_problem(await api.post(path.format("bobs"), headers=admin), 403, "forbidden")
    other_tenant = bearer(token(tenant="t2"))
    assert_problem(await api.post(path.format("s"), headers=other_tenant), 404, "not_found")
    bound_elsewhere = bearer(token(runs=("another-run",)))
    assert_problem(await api.post(path.format("s"), headers=bound_elsewhere), 404, "not_found")
    assert_problem(await api.post(path.format("missing")), 404, "not_found")
    assert (await api.post(path.format("bobs"), headers=bearer(token(sub="bob")))
            ).status_code == 201


async def test_a_subscribe_token_reads_its_one_stream_and_nothing_else(
        api: httpx.AsyncClient, server: RunnelServer, run_id: str) -> None:
    await create_stream(api, run_id)
    await create_stream(api, run_id, "other")
    await append(api, run_id, "s", [1])
    await append(api, run_id, "other", [1])
    subscribe_token = (await mint(api, run_id))["token"]
    as_bearer = bearer(subscribe_token)
    async with httpx.AsyncClient(base_url=server.api) as anonymous:
        for method, path, body in (
                ("POST", "/s/records", {"records": [{"payload": 2}]}),
                ("GET", "/s/records", None), ("GET", "/s", None), ("GET", "", None),
                ("POST", "/s/close", None), ("POST", "/s/subscribe-token", None),
                ("POST", "/s/consumers/ui/ack", {"sequence": 0})):
            where = f"/runs/{run_id}/streams{path}"
            response = await anonymous.request(method, where, json=body, headers=as_bearer)
            assert_problem(response, 401, "unauthenticated")
        query = {"access_token": subscribe_token}
        assert_problem(await anonymous.get(f"/runs/{run_id}/streams/other/subscribe",
                                           params=query), 404, "not_found")
        assert_problem(await anonymous.get(f"/runs/{run_id}/streams/other/subscribe",
                                           headers=as_bearer), 404, "not_found")
        assert_problem(await anonymous.get(f"/runs/{run_id}-x/streams/s/subscribe",
                                           params=query), 404, "not_found")
        await api.post(f"/runs/{run_id}/streams/s/close")
        for credentials in ({"params": query}, {"headers": as_bearer}):
            subscribed = await anonymous.get(f"/runs/{run_id}/streams/s/subscribe",
                                             **credentials)  # type: ignore[arg-type]
            assert subscribed.status_code == 200
            assert "event: end" in subscribed.text
    assert (await api.get(f"/runs/{run_id}/streams/s/records")).json()["head"] == 1


@pytest.mark.parametrize("scopes", [("streams:read",), ("streams:admin",)])
async def test_access_token_takes_no_api_token(
        api: httpx.AsyncClient, server: RunnelServer, run_id: str,
        scopes: tuple[str, ...]) -> None:
    await create_stream(api, run_id)
    await api.post(f"/runs/{run_id}/streams/s/close")
    async with httpx.AsyncClient(base_url=server.api) as anonymous:
        refused = await anonymous.get(f"/runs/{run_id}/streams/s/subscribe",
                                      params={"access_token": token(scopes=scopes)})
    assert_problem(refused, 401, "unauthenticated")


async def test_a_subscription_ends_at_its_tokens_expiry_and_resumes_losing_nothing(
        api: httpx.AsyncClient, server: RunnelServer, run_id: str) -> None:
    await create_stream(api, run_id)
    await append(api, run_id, "s", ["a", "b", "c"])
    url = f"{server.api}/runs/{run_id}/streams/s/subscribe"
    short = await mint(api, run_id, ttl_seconds=2)
    expires_at = datetime.fromisoformat(short["expires_at"]).timestamp()
    async with httpx.AsyncClient(timeout=30) as anonymous:
        first = await read_events(
            anonymous, url, params={"access_token": short["token"]}, until=has_event("end"),
            on_open=lambda: append(api, run_id, "s", ["d", "e"]))
        ended_after_expiry = time.time() - expires_at
        end = first[-1]
        assert (end.event, end.json()) == ("end", {"reason": "token_expired",
                                                   "last_sequence": 5})
        assert records_of(first) == [1, 2, 3, 4, 5]
        await append(api, run_id, "s", ["f", "g"])
        await api.post(f"/runs/{run_id}/streams/s/close")
        fresh = (await mint(api, run_id))["token"]
        second = await read_events(anonymous, url, params={"access_token": fresh},
                                   headers={"Last-Event-ID": "5"}, until=has_event("end"))
    assert records_of(second) == [6, 7]
    assert second[-1].json() == {"reason": "closed", "last_sequence": 7}
    assert ended_after_expiry > -1  # the stream lived to its token's expiry
    print(f"token_expired end frame {ended_after_expiry:.3f} s after exp")


async def test_a_header_tokens_subscription_ends_at_its_expiry_too(
        api: httpx.AsyncClient, server: RunnelServer, run_id: str) -> None:
    await create_stream(api, run_id)
    await append(api, run_id, "s", ["a"])
    short_lived = bearer(token(ttl=3))
    async with httpx.AsyncClient(timeout=30) as client:
        events = await read_events(client, f"{server.api}/runs/{run_id}/streams/s/subscribe",
                                   headers=short_lived, until=has_event("end"))
    assert records_of(events) == [1]
    assert events[-1].json() == {"reason": "token_expired", "last_sequence": 1}


async def test_no_problem_on_a_subscribe_url_echoes_its_token(
        api: httpx.AsyncClient, server: RunnelServer, run_id: str) -> None:
    await create_stream(api, run_id)
    subscribe_token = (await mint(api, run_id))["token"]
    api_token = token()
    url = f"/runs/{run_id}/streams/s/subscribe"
    async with httpx.AsyncClient(base_url=server.api) as anonymous:
        answers = [
            (400, await anonymous.get(url, params={"access_token": subscribe_token,
                                                   "live": "maybe"})),
            (400, await anonymous.get(url, params={"access_token": subscribe_token,
                                                   "after": "x"})),
            (400, await anonymous.get(url, params={"access_token": subscribe_token},
                                      headers={"Last-Event-ID": "nope"})),
            (400, await anonymous.get(url, params={"access_token": subscribe_token},
                                      headers={"Last-Event-ID": "999"})),
            (401, await anonymous.get(url, params={"access_token": api_token,
                                                   "live": "maybe"})),
            (401, await anonymous.get(url, params={"access_token": subscribe_token + "x"})),
            (401, await anonymous.get(url, params={"access_token": "eyJ" + api_token[3:40]})),
        ]
    for status, response in answers:
        assert response.status_code == status, response.text
        for secret in (subscribe_token, api_token, subscribe_token[:40], api_token[:40]):
            assert secret not in response.text
            assert secret[-20:] not in response.text


async def test_every_response_says_no_referrer(
        api: httpx.AsyncClient, server: RunnelServer, run_id: str) -> None:
    await create_stream(api, run_id)
    await append(api, run_id, "s", [1])
    async with httpx.AsyncClient(base_url=server.url, timeout=30) as client:
        answers = [
            await client.get("/"),
            await client.get("/healthz"),
            await client.get("/no-such-page"),
            await client.get("/api/workflow-streams/runs/x/streams"),  # 401
            await api.get(f"/runs/{run_id}/streams/s"),
            await api.post(f"/runs/{run_id}/streams/s/subscribe-token"),
            await api.get(f"/runs/{run_id}/streams/s/records", params={"after": "x"}),
        ]
        async with client.stream("GET", f"{server.api}/runs/{run_id}/streams/s/subscribe",
                                 headers=bearer(token())) as sse:
            assert sse.headers["content-type"].startswith("text/event-stream")
            answers.append(sse)
    assert {response.status_code for response in answers} >= {200, 201, 400, 401, 404}
    for response in answers:
        assert response.headers.get("referrer-policy") == "no-referrer", response.url


async def test_a_subscribe_token_from_another_node_secret_is_refused(
        api: httpx.AsyncClient, server: RunnelServer, run_id: str) -> None:
    await create_stream(api, run_id)
    await api.post(f"/runs/{run_id}/streams/s/close")
    caller = verify_token(token(), SECRET)
    forged = SubscribeTokens("another-secret-0123456789abcdef0123456789").mint(
        caller, run_id, "s").token
    genuine = SubscribeTokens(SECRET).mint(caller, run_id, "s").token
    async with httpx.AsyncClient(base_url=server.api) as anonymous:
        url = f"/runs/{run_id}/streams/s/subscribe"
        assert_problem(await anonymous.get(url, params={"access_token": forged}), 401,
                       "unauthenticated")
        assert (await anonymous.get(url, params={"access_token": genuine})).status_code == 200
