"""Verify a bearer token once, not on every request (ADR 0044).

Rules:
- only a successful verification is kept; a failure is never cached, so a bad, expired or
  not-yet-valid token costs a full verification every time and is refused every time;
- an entry serves until the token's own `exp` plus the verifier's leeway, exactly as long as
  a fresh verification would accept it, and never longer than `max_age_seconds` (60 s) after
  it was verified, so a key removed from the JWKS stops its tokens within that bound;
- revocation is not cached: the caller checks the revoked-token list on every request;
- entries are keyed by a 16-byte digest of the token (a 4 KiB token costs the cache 16
  bytes of key, not 4 KiB) and bounded at `capacity`, the least recently used leaving first.
"""

from __future__ import annotations

import hashlib
import time
from collections import OrderedDict
from collections.abc import Callable

from domain.principal import Principal
from entrypoints.auth.tokens import LEEWAY_SECONDS, TokenVerifier

CAPACITY = 10_000
MAX_AGE_SECONDS = 60.0


class VerifiedTokens:
    """`verify(token)` answers as `TokenVerifier.verify` does, from memory when it can."""

    def __init__(self, verifier: TokenVerifier, capacity: int = CAPACITY,
                 max_age_seconds: float = MAX_AGE_SECONDS,
                 clock: Callable[[], float] = time.time) -> None:
        self._verifier = verifier
        self._capacity = capacity
        self._max_age = max_age_seconds
        self._clock = clock
        self._entries: OrderedDict[bytes, tuple[float, Principal]] = OrderedDict()
        self.hits = 0
        self.misses = 0

    def verify(self, token: str) -> Principal:
        key = hashlib.blake2b(token.encode(), digest_size=16).digest()
        now = self._clock()
        entry = self._entries.get(key)
        if entry is not None:
            until, principal = entry
            if now < until:
                self._entries.move_to_end(key)
                self.hits += 1
                return principal
            del self._entries[key]
        self.misses += 1
        principal = self._verifier.verify(token)  # raises: nothing is kept
        until = now + self._max_age
        if principal.expires_at is not None:
            until = min(until, principal.expires_at + LEEWAY_SECONDS)
        self._entries[key] = (until, principal)
        if len(self._entries) > self._capacity:
            self._entries.popitem(last=False)
        return principal
