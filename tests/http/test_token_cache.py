"""The verified-token cache answers exactly as a fresh verification would (ADR 0044).

A model: a verifier whose verdict depends on the token and the time (bad tokens always fail,
good ones until `exp` + leeway). Under any sequence of verifications and clock steps the
cache's answer equals the verifier's at that moment; failures are never kept; a key-set
change shows within the cache's maximum age; the size stays bounded.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest
from hypothesis import event, given
from hypothesis import strategies as st

from domain.errors import Unauthenticated
from domain.principal import Principal
from entrypoints.auth.token_cache import VerifiedTokens
from entrypoints.auth.tokens import LEEWAY_SECONDS


@dataclass
class Clock:
    now: float = 1_000_000.0

    def __call__(self) -> float:
        return self.now


class ModelVerifier:
    """Token `good-<exp>` is valid until exp + leeway; anything else is refused."""

    def __init__(self, clock: Clock) -> None:
        self.clock = clock
        self.calls = 0
        self.refuse_all = False  # a key removed from the key set

    def verify(self, token: str) -> Principal:
        self.calls += 1
        kind, _, exp = token.partition("-")
        if self.refuse_all or kind != "good":
            raise Unauthenticated("token is not a valid Runnel token")
        if self.clock.now > float(exp) + LEEWAY_SECONDS:
            raise Unauthenticated("token expired")
        return Principal(sub="s", tenant="t", scopes=frozenset(), expires_at=float(exp))


def verdict(verify: Any, token: str) -> Principal | str:
    try:
        result: Principal = verify(token)
        return result
    except Unauthenticated as refusal:
        return str(refusal)


OPS = st.lists(st.one_of(
    st.tuples(st.just("verify"), st.sampled_from(["good-1000010", "good-1000100", "bad-1",
                                                  "good-999000"])),
    st.tuples(st.just("wait"), st.integers(min_value=0, max_value=90))), max_size=40)


@given(OPS)
def test_the_cache_answers_as_a_fresh_verification_would(ops: list[tuple[str, Any]]) -> None:
    clock = Clock()
    cached = VerifiedTokens(ModelVerifier(clock), max_age_seconds=60, clock=clock)  # type: ignore[arg-type]
    fresh = ModelVerifier(clock)
    for kind, value in ops:
        if kind == "wait":
            clock.now += value
            continue
        expected = verdict(fresh.verify, value)
        assert verdict(cached.verify, value) == expected
        event("refused" if isinstance(expected, str) else "accepted")
    assert cached.hits + cached.misses == fresh.calls


def test_a_failure_is_never_kept() -> None:
    clock = Clock()
    verifier = ModelVerifier(clock)
    cache = VerifiedTokens(verifier, clock=clock)  # type: ignore[arg-type]
    for _ in range(3):
        with pytest.raises(Unauthenticated):
            cache.verify("bad-1")
    assert verifier.calls == 3
    assert cache.hits == 0


def test_a_good_token_is_verified_once_and_a_removed_key_shows_within_the_maximum_age() -> None:
    clock = Clock()
    verifier = ModelVerifier(clock)
    cache = VerifiedTokens(verifier, max_age_seconds=60, clock=clock)  # type: ignore[arg-type]
    for _ in range(100):
        cache.verify("good-2000000")
    assert verifier.calls == 1
    verifier.refuse_all = True
    clock.now += 59
    cache.verify("good-2000000")  # still inside the bound
    clock.now += 2
    with pytest.raises(Unauthenticated):
        cache.verify("good-2000000")


def test_the_cache_is_bounded_and_keeps_no_token_text() -> None:
    clock = Clock()
    cache = VerifiedTokens(ModelVerifier(clock), capacity=5, clock=clock)  # type: ignore[arg-type]
    tokens = [f"good-{2_000_000 + index}" for index in range(20)]
    for token in tokens:
        cache.verify(token)
    assert len(cache._entries) == 5
    assert all(isinstance(key, bytes) and len(key) == 16 for key in cache._entries)
    cache.verify(tokens[-1])
    assert cache.hits == 1
