"""The token issuer's public keys (a JWKS), from a file or a URL, held in memory per node.

Rules (ADR 0024):
- only asymmetric keys with a `kid` are kept: RSA (RS256) and OKP Ed25519 (EdDSA); a
  symmetric (`oct`) key, a key without `kid` or with another algorithm is ignored, so
  no JWKS key ever verifies an HS256 token;
- a key's algorithm is its `alg`, else RS256 for RSA and EdDSA for OKP;
- a lookup reads the set in memory and never waits on the network. A URL's set is
  fetched before the node serves, again every `cache_seconds`, and early when a token
  names an unknown `kid`, but never more often than once per `min_refresh_seconds`
  (random `kid`s cannot make the node hammer the issuer). The token naming an
  unknown `kid` is refused meanwhile; a failed fetch keeps the last good set;
- a file's set is read once, at start; a file that cannot be read is a configuration
  error (the node does not start).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
import jwt

from application.background import running_in_background
from entrypoints.composition.settings import ConfigurationError

log = logging.getLogger("runnel.jwks")

MAX_JWKS_BYTES = 1024 * 1024
FETCH_TIMEOUT_SECONDS = 5.0
_ALGORITHMS = {"RSA": "RS256", "OKP": "EdDSA"}


def parse_jwks(document: Any) -> dict[str, jwt.PyJWK]:
    """The usable keys of a JWKS document by `kid` (see the rules); raises ValueError
    when the document is not a JWKS at all."""
    if not isinstance(document, Mapping) or not isinstance(document.get("keys"), list):
        raise ValueError("not a JWKS: expected an object with a list of keys")
    keys: dict[str, jwt.PyJWK] = {}
    for entry in document["keys"]:
        if not isinstance(entry, Mapping) or entry.get("use", "sig") != "sig":
            continue
        kid, kty = entry.get("kid"), entry.get("kty")
        usable = _ALGORITHMS.get(kty) if isinstance(kty, str) else None
        algorithm = entry.get("alg", usable)
        if not isinstance(kid, str) or not kid or usable is None or algorithm != usable:
            continue
        try:
            keys[kid] = jwt.PyJWK(dict(entry), algorithm)
        except jwt.PyJWTError as error:
            log.warning("JWKS key %.64r ignored: %s", kid, error)
    return keys


class StaticKeys:
    """A JWKS read once (RUNNEL_JWT_JWKS_FILE)."""

    def __init__(self, keys: Mapping[str, jwt.PyJWK]) -> None:
        self._keys = dict(keys)

    @classmethod
    def from_file(cls, path: Path) -> StaticKeys:
        try:
            keys = parse_jwks(json.loads(path.read_bytes()))
        except (OSError, ValueError) as error:
            raise ConfigurationError(f"RUNNEL_JWT_JWKS_FILE {path}: {error}") from None
        if not keys:
            raise ConfigurationError(f"RUNNEL_JWT_JWKS_FILE {path}: no RS256 or EdDSA key "
                                     "with a kid")
        return cls(keys)

    def key_for(self, kid: str) -> jwt.PyJWK | None:
        return self._keys.get(kid)


Fetch = Callable[[str], Awaitable[bytes]]


async def fetch_jwks(url: str) -> bytes:
    async with httpx.AsyncClient(timeout=FETCH_TIMEOUT_SECONDS, follow_redirects=False) as client, \
            client.stream("GET", url, headers={"accept": "application/json"}) as response:
        response.raise_for_status()
        body = bytearray()
        async for chunk in response.aiter_bytes():
            body += chunk
            if len(body) > MAX_JWKS_BYTES:
                raise ValueError(f"JWKS larger than {MAX_JWKS_BYTES} bytes")
        return bytes(body)


class CachedUrlKeys:
    """A JWKS fetched from a URL and cached (RUNNEL_JWT_JWKS_URL); see the rules."""

    def __init__(self, url: str, cache_seconds: float, min_refresh_seconds: float,
                 fetch: Fetch = fetch_jwks) -> None:
        self._url = url
        self._cache_seconds = cache_seconds
        self._min_refresh_seconds = min_refresh_seconds
        self._fetch = fetch
        self._keys: dict[str, jwt.PyJWK] = {}
        self._wanted = asyncio.Event()
        self._loop: asyncio.AbstractEventLoop | None = None
        self.fetches = 0
        """Fetches attempted so far (tests, diagnostics)."""

    def key_for(self, kid: str) -> jwt.PyJWK | None:
        key = self._keys.get(kid)
        if key is None and self._loop is not None:
            self._loop.call_soon_threadsafe(self._wanted.set)
        return key

    @asynccontextmanager
    async def kept_fresh(self) -> AsyncIterator[CachedUrlKeys]:
        """Fetch once (the node serves only after), then keep refreshing until exit."""
        self._loop = asyncio.get_running_loop()
        await self._refresh()
        try:
            async with running_in_background(self._refresh_forever(), "runnel-jwks"):
                yield self
        finally:
            self._loop = None

    async def _refresh_forever(self) -> None:
        loop = asyncio.get_running_loop()
        fetched_at = loop.time()
        while True:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wanted.wait(), self._cache_seconds)
            wait = fetched_at + self._min_refresh_seconds - loop.time()
            if wait > 0:
                await asyncio.sleep(wait)
            fetched_at = loop.time()
            await self._refresh()
            # Wants that came in while fetching are answered by this fetch; a kid that is
            # still unknown asks again with its next token.
            self._wanted.clear()

    async def _refresh(self) -> None:
        self.fetches += 1
        try:
            keys = parse_jwks(json.loads(await self._fetch(self._url)))
        except Exception as error:  # keep the last good set; the next refresh tries again
            log.warning("JWKS fetch from RUNNEL_JWT_JWKS_URL failed: %r", error)
            return
        if not keys:
            log.warning("JWKS at RUNNEL_JWT_JWKS_URL has no RS256 or EdDSA key with a kid")
            return
        self._keys = keys
