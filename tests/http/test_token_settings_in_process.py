"""The token settings as the API applies them (Litestar's test client, in-memory storage):
JWKS keys, issuer and audience, the lifetime bound, and revocation on every route."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import jwt
from litestar.testing import AsyncTestClient
from pydantic import SecretStr

from application.ports.access import Revocation
from entrypoints.auth.tokens import mint_token
from entrypoints.composition.container import NodeHost
from entrypoints.composition.settings import Settings
from entrypoints.http.app import create_app
from tests.http.support import assert_problem
from tests.http.test_auth import API_ROUTES
from tests.http.token_keys import (
    Issuer,
    claims,
    ed25519_key,
    hmac_signed,
    jwks,
    rsa_key,
    write_jwks,
)

SECRET = "in-process-token-secret-0123456789abcdef"
API = "/api/workflow-streams"
RSA = rsa_key()
ED = ed25519_key()


@asynccontextmanager
async def app(**settings: Any) -> AsyncIterator[tuple[AsyncTestClient[Any], NodeHost]]:
    configured = Settings(storage="memory", jwt_secret=SecretStr(SECRET), workers=False,
                          **settings)
    host = NodeHost(configured)
    async with AsyncTestClient(create_app(configured, host)) as client:
        yield client, host


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


async def listed(client: AsyncTestClient[Any], token: str) -> Any:
    return await client.get(f"{API}/runs/r1/streams", headers=bearer(token))


def accepted(response: Any) -> bool:
    """Authenticated: the run's listing, or the 404 of a run nobody created yet."""
    return response.status_code == 200 or (
        response.status_code == 404 and response.json()["code"] == "not_found")


async def test_rs256_and_eddsa_tokens_from_a_jwks_file_are_served(tmp_path: Path) -> None:
    async with app(jwt_jwks_file=write_jwks(tmp_path / "jwks.json", RSA, ED)) as (client, _):
        assert accepted(await listed(client, RSA.sign(claims())))
        assert accepted(await listed(client, ED.sign(claims())))
        for refused in (rsa_key().sign(claims()),  # same kid, another key
                        mint_token(SECRET, tenant="t1", sub="a", scopes=["streams:read"]),
                        hmac_signed(claims(), RSA.public_pem, {"alg": "HS256", "kid": RSA.kid})):
            assert_problem(await listed(client, refused), 401, "unauthenticated")


async def test_issuer_and_audience_are_enforced_when_configured() -> None:
    async with app(jwt_issuer="https://idp.example", jwt_audience="runnel") as (client, _):
        good = jwt.encode(claims(iss="https://idp.example", aud="runnel"), SECRET)
        assert accepted(await listed(client, good))
        for bad in (claims(iss="https://other.example", aud="runnel"),
                    claims(iss="https://idp.example", aud="other"), claims()):
            response = await listed(client, jwt.encode(bad, SECRET))
            assert_problem(response, 401, "unauthenticated")


async def test_a_token_living_longer_than_the_maximum_is_401_with_the_reason() -> None:
    async with app(max_token_lifetime_seconds=3600) as (client, _):
        now = int(time.time())
        assert accepted(await listed(client, jwt.encode(claims(iat=now, exp=now + 3600),
                                                        SECRET)))
        for exp in (now + 3601, 1e30):
            body = assert_problem(await listed(client, jwt.encode(
                claims(iat=now, exp=exp), SECRET)), 401, "unauthenticated")
            assert body["detail"] == "token lifetime exceeds the maximum of 3600 seconds"


async def test_a_revoked_token_is_401_on_every_route_and_others_are_not() -> None:
    async with app() as (client, host):
        scopes = ["streams:read", "streams:write", "streams:admin"]
        doomed = mint_token(SECRET, tenant="t1", sub="alice", scopes=scopes)
        kept = mint_token(SECRET, tenant="t1", sub="alice", scopes=scopes)
        created = await client.post(f"{API}/runs/r1/streams", headers=bearer(doomed),
                                    json={"stream_id": "s", "content_class": "x"})
        assert created.status_code == 201
        jti = jwt.decode(doomed, options={"verify_signature": False})["jti"]
        until = datetime.now(UTC) + timedelta(hours=1)
        await host.node.backend.revoked.revoke(Revocation(jti, "t1", until),
                                               datetime.now(UTC))
        async with asyncio.timeout(30):  # the ring reaches the node's copy in a moment
            while (await listed(client, doomed)).status_code != 401:
                await asyncio.sleep(0.01)
        for method, path, body in API_ROUTES:
            response = await client.request(method, API + path.format(run="r1"), json=body,
                                            headers=bearer(doomed))
            problem = assert_problem(response, 401, "unauthenticated")
            assert problem["detail"] == "token has been revoked", (method, path)
        assert accepted(await listed(client, kept))


async def test_keys_from_a_jwks_url_are_fetched_before_serving_and_once() -> None:
    issuer = Issuer(jwks(RSA))
    try:
        async with app(jwt_jwks_url=issuer.url, jwt_jwks_min_refresh_seconds=3600) as (
                client, _):
            for _ in range(20):
                assert accepted(await listed(client, RSA.sign(claims())))
            assert_problem(await listed(client, ED.sign(claims())), 401, "unauthenticated")
        assert issuer.fetches == 1
    finally:
        issuer.close()
