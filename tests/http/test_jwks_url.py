"""A JWKS URL is fetched once and cached; an unknown `kid` refreshes it, at a bounded rate,
and no request ever waits on the fetch (ADR 0024). The issuer is a real local HTTP server."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest

from domain.errors import Unauthenticated
from entrypoints.auth.jwks import CachedUrlKeys
from entrypoints.auth.tokens import TokenPolicy, TokenVerifier
from tests.http.token_keys import Issuer, claims, ed25519_key, jwks, rsa_key

POLICY = TokenPolicy(algorithms=("RS256", "EdDSA"))
DEADLINE_SECONDS = 30.0


@pytest.fixture
def issuer() -> Iterator[Issuer]:
    served = Issuer(jwks(RSA))
    try:
        yield served
    finally:
        served.close()


RSA = rsa_key("rsa-old")
NEW = ed25519_key("ed-new")


async def test_the_key_set_is_fetched_once_and_served_from_memory(issuer: Issuer) -> None:
    keys = CachedUrlKeys(issuer.url, cache_seconds=3600, min_refresh_seconds=3600)
    verifier = TokenVerifier(POLICY, keys=keys)
    async with keys.kept_fresh():
        assert issuer.fetches == 1  # fetched before the node serves
        for _ in range(200):
            assert verifier.verify(RSA.sign(claims())).tenant == "t1"
        for _ in range(50):  # unknown kids ask for a refresh, but not before the minimum
            with pytest.raises(Unauthenticated, match="not in the issuer's key set"):
                verifier.verify(NEW.sign(claims()))
        await asyncio.sleep(0.3)
    assert issuer.fetches == 1
    assert keys.fetches == 1


async def test_an_unknown_kid_refreshes_the_set_so_a_rotated_key_is_accepted(
        issuer: Issuer) -> None:
    keys = CachedUrlKeys(issuer.url, cache_seconds=3600, min_refresh_seconds=0.2)
    verifier = TokenVerifier(POLICY, keys=keys)
    async with keys.kept_fresh():
        issuer.document = jwks(RSA, NEW)  # the issuer rotates in a new key
        token = NEW.sign(claims())
        with pytest.raises(Unauthenticated):
            verifier.verify(token)  # refused at once: the request does not wait
        deadline = asyncio.get_running_loop().time() + DEADLINE_SECONDS
        while True:
            try:
                assert verifier.verify(token).sub == "alice"
                break
            except Unauthenticated:
                assert asyncio.get_running_loop().time() < deadline, "key never refreshed"
                await asyncio.sleep(0.05)
        fetched = issuer.fetches
        assert fetched >= 2
        for _ in range(100):
            verifier.verify(token)
            verifier.verify(RSA.sign(claims()))
        await asyncio.sleep(0.5)
        assert issuer.fetches == fetched  # known kids ask for nothing


async def test_a_failing_issuer_keeps_the_last_good_set(issuer: Issuer) -> None:
    keys = CachedUrlKeys(issuer.url, cache_seconds=0.05, min_refresh_seconds=0.05)
    verifier = TokenVerifier(POLICY, keys=keys)
    async with keys.kept_fresh():
        issuer.document = {"not": "a jwks"}
        deadline = asyncio.get_running_loop().time() + DEADLINE_SECONDS
        while issuer.fetches < 3:
            assert asyncio.get_running_loop().time() < deadline
            await asyncio.sleep(0.05)
        assert verifier.verify(RSA.sign(claims())).sub == "alice"
