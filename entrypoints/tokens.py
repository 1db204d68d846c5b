"""The bearer token format: HS256 JWTs carrying `sub`, `tenant`, `scopes`, optional `runs`, `exp`.

Minting is for local use (`runnel token`, the development token `runnel serve`
prints, tests); verifying turns a token into a `Principal` or refuses it with
`Unauthenticated`. Every claim is checked for shape, because the tenant and the
run ids become parts of storage keys.
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Iterable
from typing import Any

import jwt

from domain.errors import InvalidIdentifier, Unauthenticated
from domain.identifiers import validate_id
from domain.principal import Principal

ALGORITHM = "HS256"
LEEWAY_SECONDS = 30
"""Clock skew tolerated on `exp`; a token expired for longer than this is refused."""
MAX_SCOPES = 32
MAX_RUNS = 1000


def mint_token(secret: str, *, tenant: str, sub: str, scopes: Iterable[str],
               runs: Iterable[str] | None = None, ttl_seconds: int = 3600,
               now: float | None = None) -> str:
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
    return jwt.encode(claims, secret, algorithm=ALGORITHM)


def verify_token(token: str, secret: str) -> Principal:
    """A valid, unexpired HS256 token with well-formed claims, as a principal."""
    try:
        claims = jwt.decode(token, secret, algorithms=[ALGORITHM], leeway=LEEWAY_SECONDS,
                            options={"require": ["exp", "sub", "tenant", "scopes"]})
    except jwt.ExpiredSignatureError:
        raise Unauthenticated("token expired") from None
    except jwt.PyJWTError:
        raise Unauthenticated("token is not a valid Runnel token") from None
    return _principal(claims)


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
    if token_id is not None and not isinstance(token_id, str):
        raise Unauthenticated("token claim jti must be a string")
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
