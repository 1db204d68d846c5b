"""The auth matrix: no token, bad token, expired, wrong scope, other tenant, run binding,
pinned readers/writers, and `?access_token=` (a subscribe token) accepted on the subscribe
route only."""

from __future__ import annotations

import httpx
import pytest

from tests.http.server import SECRET, RunnelServer, bearer, token
from tests.http.support import append, assert_problem, create_stream

API_ROUTES = [
    ("POST", "/runs/{run}/streams", {"stream_id": "s", "content_class": "x"}),
    ("GET", "/runs/{run}/streams", None),
    ("GET", "/runs/{run}/streams/s", None),
    ("POST", "/runs/{run}/streams/s/records", {"records": [{"payload": 1}]}),
    ("GET", "/runs/{run}/streams/s/records", None),
    ("GET", "/runs/{run}/streams/s/subscribe", None),
    ("POST", "/runs/{run}/streams/s/consumers/ui/ack", {"sequence": 0}),
    ("POST", "/runs/{run}/streams/s/close", None),
    ("PUT", "/runs/{run}/streams/s/legal-hold", {"held": True}),
    ("DELETE", "/runs/{run}", None),
]

BAD_CREDENTIALS = {
    "none": {},
    "garbage": {"Authorization": "Bearer not-a-jwt"},
    "wrong scheme": {"Authorization": "Basic dXNlcjpwYXNz"},
    "bearer without token": {"Authorization": "Bearer"},
    "other secret": bearer(token(secret="another-secret-0123456789abcdef0123456789")),
    "expired": bearer(token(ttl=-3600)),
    "tenant outside the id alphabet": bearer(token(tenant="a/b")),
}


@pytest.mark.parametrize("credentials", BAD_CREDENTIALS.values(), ids=BAD_CREDENTIALS.keys())
@pytest.mark.parametrize(("method", "path", "body"), API_ROUTES,
                         ids=[f"{m} {p}" for m, p, _ in API_ROUTES])
async def test_every_api_route_refuses_missing_or_bad_tokens_with_401(
        server: RunnelServer, run_id: str, method: str, path: str, body: object,
        credentials: dict[str, str]) -> None:
    async with httpx.AsyncClient(base_url=server.api) as client:
        response = await client.request(method, path.format(run=run_id), json=body,
                                        headers=credentials)
    assert_problem(response, 401, "unauthenticated")
    assert response.headers["www-authenticate"].startswith("Bearer")


async def test_operations_endpoints_need_no_token_but_metrics(server: RunnelServer) -> None:
    async with httpx.AsyncClient(base_url=server.url) as client:
        for path in ("/healthz", "/readyz", "/schema/openapi.json"):
            assert (await client.get(path)).status_code == 200, path
        assert (await client.get("/metrics")).status_code == 401  # the operator's (ADR 0061)


async def test_a_token_without_the_scope_is_403(api: httpx.AsyncClient, run_id: str) -> None:
    await create_stream(api, run_id)
    reader = bearer(token(scopes=("streams:read",)))
    writer = bearer(token(scopes=("streams:write",)))
    appended = await api.post(f"/runs/{run_id}/streams/s/records",
                              json={"records": [{"payload": 1}]}, headers=reader)
    assert_problem(appended, 403, "forbidden")
    created = await api.post(f"/runs/{run_id}/streams",
                             json={"stream_id": "t", "content_class": "x"}, headers=reader)
    assert_problem(created, 403, "forbidden")
    read = await api.get(f"/runs/{run_id}/streams/s/records", headers=writer)
    assert_problem(read, 403, "forbidden")
    subscribed = await api.get(f"/runs/{run_id}/streams/s/subscribe", headers=writer)
    assert_problem(subscribed, 403, "forbidden")


async def test_another_tenants_run_is_404_everywhere(api: httpx.AsyncClient,
                                                     run_id: str) -> None:
    await create_stream(api, run_id)
    await append(api, run_id, "s", [1])
    other = bearer(token(tenant="t2"))
    for method, path, body in API_ROUTES[1:-2]:
        response = await api.request(method, path.format(run=run_id), json=body, headers=other)
        assert_problem(response, 404, "not_found")
    # Creating the same ids in another tenant makes a separate stream.
    created = await api.post(f"/runs/{run_id}/streams", headers=other,
                             json={"stream_id": "s", "content_class": "different"})
    assert created.status_code == 201
    mine = (await api.get(f"/runs/{run_id}/streams/s/records")).json()["records"]
    assert [r["payload"] for r in mine] == [1]


async def test_a_token_bound_to_runs_sees_no_other_run(api: httpx.AsyncClient,
                                                       run_id: str) -> None:
    await create_stream(api, run_id)
    bound_elsewhere = bearer(token(runs=("some-other-run",)))
    assert_problem(await api.get(f"/runs/{run_id}/streams/s", headers=bound_elsewhere), 404,
                   "not_found")
    bound_here = bearer(token(runs=(run_id,)))
    assert (await api.get(f"/runs/{run_id}/streams/s", headers=bound_here)).status_code == 200


async def test_principals_outside_the_pinned_readers_and_writers_are_403(
        api: httpx.AsyncClient, run_id: str) -> None:
    bob = bearer(token(sub="bob"))
    await create_stream(api, run_id, "bobs",
                        authorization={"readers": ["bob"], "writers": ["bob"]})
    append_by_alice = await api.post(f"/runs/{run_id}/streams/bobs/records",
                                     json={"records": [{"payload": 1}]})
    assert_problem(append_by_alice, 403, "forbidden")
    for path in ("", "/records", "/subscribe"):
        assert_problem(await api.get(f"/runs/{run_id}/streams/bobs{path}"), 403, "forbidden")
    assert (await api.post(f"/runs/{run_id}/streams/bobs/records", headers=bob,
                           json={"records": [{"payload": 1}]})).status_code == 201
    assert (await api.get(f"/runs/{run_id}/streams/bobs/records", headers=bob)).status_code == 200


async def test_access_token_in_the_query_is_accepted_on_subscribe_only(
        api: httpx.AsyncClient, server: RunnelServer, run_id: str) -> None:
    await create_stream(api, run_id)
    await append(api, run_id, "s", [1])
    await api.post(f"/runs/{run_id}/streams/s/close")
    minted = await api.post(f"/runs/{run_id}/streams/s/subscribe-token")
    query = {"access_token": minted.json()["token"]}
    async with httpx.AsyncClient(base_url=server.api) as anonymous:
        subscribed = await anonymous.get(f"/runs/{run_id}/streams/s/subscribe", params=query)
        assert subscribed.status_code == 200
        assert "event: end" in subscribed.text
        for path in ("/records", ""):
            response = await anonymous.get(f"/runs/{run_id}/streams/s{path}", params=query)
            assert_problem(response, 401, "unauthenticated")
        bad = await anonymous.get(f"/runs/{run_id}/streams/s/subscribe",
                                  params={"access_token": "garbage"})
        assert_problem(bad, 401, "unauthenticated")


def test_the_test_secret_is_what_the_server_uses(server: RunnelServer) -> None:
    # Guards the matrix above: a token signed with SECRET must be accepted.
    response = httpx.get(server.api + "/runs/x/streams", headers=bearer(token(secret=SECRET)))
    assert response.status_code == 404
