"""`runnel revoke` reaches every node sharing the database (ADR 0024): a revoked token is
401 on every route of both nodes, through the NOTIFY alone (the refresh interval is set far
beyond the test's deadline), while the same principal's other tokens keep working; a
subscription open on a node when another process revokes its parent token ends with
`token_revoked` (ADR 0060)."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from collections.abc import Iterator

import httpx
import jwt
import pytest

from tests.e2e.support import two_nodes
from tests.http.server import SECRET, RunnelServer, bearer, token
from tests.http.support import (
    append,
    assert_problem,
    create_stream,
    has_event,
    read_events,
    records_of,
)
from tests.http.test_auth import API_ROUTES

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ENV = {"RUNNEL_REVOCATION_REFRESH_SECONDS": "3600"}
DEADLINE_SECONDS = 30.0
ALL_SCOPES = ("streams:read", "streams:write", "streams:admin")


@pytest.fixture(scope="module")
def pair(database: str, tmp_path_factory: pytest.TempPathFactory
         ) -> Iterator[tuple[RunnelServer, RunnelServer]]:
    with two_nodes(database, tmp_path_factory, ENV, ENV) as both:
        yield both


def revoke(database: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "entrypoints.commands", "revoke", *args],
                          capture_output=True, text=True, cwd=REPO, timeout=120,
                          env={**os.environ, "RUNNEL_DATABASE_URL": database,
                               "RUNNEL_STORAGE": "postgres", "RUNNEL_JWT_SECRET": SECRET})


async def refused_within_deadline(node: RunnelServer, headers: dict[str, str],
                                  run_id: str) -> None:
    async with httpx.AsyncClient(base_url=node.api, headers=headers) as client, \
            asyncio.timeout(DEADLINE_SECONDS):
        while (await client.get(f"/runs/{run_id}/streams")).status_code != 401:
            await asyncio.sleep(0.05)


async def test_a_revoked_token_is_401_on_every_route_of_every_node(
        pair: tuple[RunnelServer, RunnelServer], database: str, run_id: str) -> None:
    doomed, kept = token(scopes=ALL_SCOPES), token(scopes=ALL_SCOPES)
    jti = jwt.decode(doomed, options={"verify_signature": False})["jti"]
    async with httpx.AsyncClient(base_url=pair[0].api, headers=bearer(doomed)) as client:
        await create_stream(client, run_id)
    for node in pair:
        async with httpx.AsyncClient(base_url=node.api, headers=bearer(doomed)) as client:
            assert (await client.get(f"/runs/{run_id}/streams")).status_code == 200

    done = revoke(database, jti, "--tenant", "t1")
    assert done.returncode == 0, done.stderr
    assert f"token {jti} of tenant t1 revoked until" in done.stdout

    for node in pair:
        await refused_within_deadline(node, bearer(doomed), run_id)
        async with httpx.AsyncClient(base_url=node.api) as client:
            for method, path, body in API_ROUTES:
                response = await client.request(method, path.format(run=run_id), json=body,
                                                headers=bearer(doomed))
                problem = assert_problem(response, 401, "unauthenticated")
                assert problem["detail"] == "token has been revoked"
            listed = await client.get(f"/runs/{run_id}/streams", headers=bearer(kept))
            assert listed.status_code == 200


async def test_a_jti_revoked_in_another_tenant_only_is_still_accepted(
        pair: tuple[RunnelServer, RunnelServer], database: str, run_id: str) -> None:
    mine = token()
    jti = jwt.decode(mine, options={"verify_signature": False})["jti"]
    assert revoke(database, jti, "--tenant", "t2").returncode == 0
    everywhere = token()
    assert revoke(database, jwt.decode(everywhere, options={"verify_signature": False})["jti"]
                  ).returncode == 0
    for node in pair:
        await refused_within_deadline(node, bearer(everywhere), run_id)
        async with httpx.AsyncClient(base_url=node.api, headers=bearer(mine)) as client:
            assert (await client.get(f"/runs/{run_id}/streams")).status_code == 404


async def test_a_stream_open_on_one_node_ends_when_another_process_revokes_its_parent(
        pair: tuple[RunnelServer, RunnelServer], database: str, run_id: str) -> None:
    parent = token()
    async with httpx.AsyncClient(base_url=pair[0].api, headers=bearer(parent)) as client:
        await create_stream(client, run_id)
        await append(client, run_id, "s", ["a"])
        minted = await client.post(f"/runs/{run_id}/streams/s/subscribe-token")
    url = f"{pair[1].api}/runs/{run_id}/streams/s/subscribe"

    async def revoke_parent() -> None:
        done = await asyncio.to_thread(
            revoke, database, jwt.decode(parent, options={"verify_signature": False})["jti"])
        assert done.returncode == 0, done.stderr

    async with httpx.AsyncClient(timeout=DEADLINE_SECONDS + 120) as client:
        events = await read_events(client, url, params={"access_token": minted.json()["token"]},
                                   until=has_event("end"), on_open=revoke_parent)
    assert records_of(events) == [1]
    assert events[-1].json() == {"reason": "token_revoked", "last_sequence": 1}


def test_revoke_refuses_what_it_cannot_do(database: str) -> None:
    for args, reason in ((("j1", "--expires-at", "2001-01-01T00:00:00Z"), "in the past"),
                         (("j1", "--expires-at", "tomorrow"), "not an ISO-8601"),
                         (("j1", "--tenant", "a/b"), "tenant"),
                         (("x" * 300,), "1 to 256 characters")):
        refused = revoke(database, *args)
        assert refused.returncode == 2, refused
        assert refused.stderr.count("\n") == 1 and reason in refused.stderr, refused.stderr
