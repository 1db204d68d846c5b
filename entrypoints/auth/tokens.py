"""The bearer token format: JWTs carrying `sub`, `tenant`, `scopes`, optional `runs`, `exp`.

Minting is for local use (`runnel token`, the development token `runnel serve`
prints, tests) and always signs HS256 with the node's secret; verifying turns a
token into a `Principal` or refuses it with `Unauthenticated`.

Rules (ADR 0006, ADR 0024):
- the accepted algorithms are an explicit list (`TokenPolicy.algorithms`); an HS256
  token is checked with the secret only, an RS256 or EdDSA token with the JWKS key
  its `kid` names only, and only when that key's algorithm is the token's: no key
  ever verifies a token of another algorithm (no algorithm confusion);
- no token lives longer than `max_lifetime_seconds`: `exp - iat` above it, or
  without `iat`, `exp` further than that from now, is refused;
- `iss` and `aud` are required and must match when the policy names them;
- every claim is checked for shape, because the tenant and the run ids become parts
  of storage keys;
- a refusal says why in one short sentence that never repeats the token or its
  header values; a signature that does not verify says so (`SIGNATURE_MISMATCH`).
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Protocol

import jwt

from domain.errors import InvalidIdentifier, Unauthenticated
from domain.identifiers import validate_id
from domain.principal import Principal

ALGORITHM = "HS256"
"""What `mint_token` signs with."""
LEEWAY_SECONDS = 30
"""Clock skew tolerated on `exp`, `iat`, `nbf` and the lifetime without `iat`."""
DEFAULT_MAX_LIFETIME_SECONDS = 24 * 3600
MAX_SCOPES = 32
MAX_RUNS = 1000
MAX_TOKEN_ID_LENGTH = 256
SIGNATURE_MISMATCH = ("token signature does not match this server's key: it was signed with "
                      "another secret (a `runnel token` run with another RUNNEL_DATA_DIR or "
                      "RUNNEL_JWT_SECRET than the server's?) or another key")
"""The detail of a well-formed token whose signature fails: the one mistake a first run
makes (ADR 0036)."""


@dataclass(frozen=True)
class TokenPolicy:
    """What a token must satisfy besides its signature."""

    algorithms: tuple[str, ...] = (ALGORITHM,)
    max_lifetime_seconds: int = DEFAULT_MAX_LIFETIME_SECONDS
    issuer: str | None = None
    audience: str | None = None


class PublicKeys(Protocol):
    """The issuer's public keys by `kid` (`entrypoints.auth.jwks`); a lookup never waits."""

    def key_for(self, kid: str) -> jwt.PyJWK | None: ...


def mint_token(secret: str, *, tenant: str, sub: str, scopes: Iterable[str],
               runs: Iterable[str] | None = None, ttl_seconds: int = 3600,
               now: float | None = None, issuer: str | None = None,
               audience: str | None = None) -> str:
    issued = int(time.time() if now is None else now)
    claims: dict[str, Any] = {
        "sub": sub,
        "tenant": tenant,
        "scopes": list(scopes),
        "iat": issued,
        "exp": issued + ttl_seconds,
        "jti": secrets.token_hex(8),
    }
    if runs is not None:
        claims["runs"] = list(runs)
    if issuer is not None:
        claims["iss"] = issuer
    if audience is not None:
        claims["aud"] = audience
    return jwt.encode(claims, secret, algorithm=ALGORITHM)


class TokenVerifier:
    """Verifies bearer tokens under one policy, with the HS256 secret and/or a JWKS."""

    def __init__(self, policy: TokenPolicy, secret: str | None = None,
                 keys: PublicKeys | None = None) -> None:
        self.policy = policy
        self._secret = secret
        self._keys = keys
        self._hs256_only = policy.algorithms == (ALGORITHM,)
        required = ["exp", "sub", "tenant", "scopes"]
        required += [claim for claim, wanted in (("iss", policy.issuer),
                                                 ("aud", policy.audience)) if wanted]
        self._options: Any = {"require": required}

    def verify(self, token: str) -> Principal:
        """A valid, unexpired token with well-formed claims, as a principal."""
        if self._hs256_only:  # the local default: PyJWT checks the header's alg itself
            algorithm, key = ALGORITHM, self._secret
        else:
            algorithm, key = self._key(token)
        if key is None:
            raise Unauthenticated("token algorithm is not accepted")
        claims = self._decode(token, key, algorithm)
        self._check_lifetime(claims)
        return _principal(claims)

    def _key(self, token: str) -> tuple[str, Any]:
        try:
            header = jwt.get_unverified_header(token)
        except jwt.PyJWTError:
            raise Unauthenticated("token is not a valid Runnel token") from None
        algorithm = header.get("alg")
        if not isinstance(algorithm, str) or algorithm not in self.policy.algorithms:
            raise Unauthenticated("token algorithm is not accepted")
        if algorithm == ALGORITHM:
            return algorithm, self._secret
        kid = header.get("kid")
        if not isinstance(kid, str) or not kid:
            raise Unauthenticated("token has no key id (kid)")
        jwk = self._keys.key_for(kid) if self._keys is not None else None
        if jwk is None:
            raise Unauthenticated("token key id is not in the issuer's key set")
        if jwk.algorithm_name != algorithm:
            raise Unauthenticated("token algorithm does not match its key")
        return algorithm, jwk.key

    def _decode(self, token: str, key: Any, algorithm: str) -> dict[str, Any]:
        policy = self.policy
        try:
            claims: dict[str, Any] = jwt.decode(
                token, key, algorithms=[algorithm], leeway=LEEWAY_SECONDS,
                issuer=policy.issuer, audience=policy.audience, options=self._options)
        except jwt.ExpiredSignatureError:
            raise Unauthenticated("token expired") from None
        except jwt.ImmatureSignatureError:
            raise Unauthenticated("token is not valid yet") from None
        except jwt.InvalidIssuerError:
            raise Unauthenticated("token issuer (iss) is not accepted") from None
        except jwt.InvalidAudienceError:
            raise Unauthenticated("token audience (aud) is not accepted") from None
        except jwt.MissingRequiredClaimError as error:
            raise Unauthenticated(f"token lacks the {error.claim} claim") from None
        except jwt.InvalidSignatureError:
            raise Unauthenticated(SIGNATURE_MISMATCH) from None
        except jwt.PyJWTError:
            raise Unauthenticated("token is not a valid Runnel token") from None
        return claims

    def _check_lifetime(self, claims: dict[str, Any]) -> None:
        """PyJWT checked that `exp` (and `iat`, if present) convert to integers."""
        limit = self.policy.max_lifetime_seconds
        try:
            expires = int(claims["exp"])
            issued = int(claims["iat"]) if "iat" in claims else None
        except (TypeError, ValueError, OverflowError):
            raise Unauthenticated("token claims exp and iat must be integers") from None
        lifetime = (expires - issued if issued is not None
                    else expires - time.time() - LEEWAY_SECONDS)
        if lifetime > limit:
            raise Unauthenticated(f"token lifetime exceeds the maximum of {limit} seconds")


def verify_token(token: str, secret: str, policy: TokenPolicy | None = None) -> Principal:
    """An HS256 token checked with `secret` under `policy` (default: the local one)."""
    return TokenVerifier(policy or TokenPolicy(), secret).verify(token)


def _principal(claims: dict[str, Any]) -> Principal:
    sub, tenant, scopes = claims["sub"], claims["tenant"], claims["scopes"]
    runs = claims.get("runs")
    token_id = claims.get("jti")
    if not isinstance(sub, str) or not 0 < len(sub) <= 256:
        raise Unauthenticated("token claim sub must be a string of 1-256 characters")
    if not _strings(scopes, MAX_SCOPES):
        raise Unauthenticated("token claim scopes must be a list of strings")
    if runs is not None and not _strings(runs, MAX_RUNS):
        raise Unauthenticated("token claim runs must be a list of strings")
    if token_id is not None and not (isinstance(token_id, str)
                                     and 0 < len(token_id) <= MAX_TOKEN_ID_LENGTH):
        raise Unauthenticated("token claim jti must be a string of 1-256 characters")
    try:
        validate_id(tenant, "tenant")
    except InvalidIdentifier:
        raise Unauthenticated("token claim tenant must use the id alphabet") from None
    return Principal(sub=sub, tenant=tenant, scopes=frozenset(scopes),
                     runs=frozenset(runs) if runs is not None else None, token_id=token_id,
                     expires_at=float(claims["exp"]))


def _strings(value: Any, limit: int) -> bool:
    return (isinstance(value, list) and len(value) <= limit
            and all(isinstance(item, str) for item in value))
