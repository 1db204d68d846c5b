"""Subscribe tokens: short-lived, read-only credentials bound to one stream, for URLs.

Browsers cannot set headers on `EventSource`, so a subscription URL carries its
credential in `?access_token=`. That URL may end up in logs, histories and
`Referer` headers, so the only credential it takes is one of these (ADR 0023).

Rules:
- minted by a node for a caller that may read the stream (the route checks that
  first), bound to the tenant, run and stream, and to the caller's `sub`. It
  grants `streams:read` on that stream and nothing else;
- it records the `jti` of the API token it was minted from (`pjt`, absent when that
  token has none and so cannot be revoked): revoking either refuses it, and ends the
  streams it opened (ADR 0060). Only an API token mints one, so there is no chain;
- it lives `DEFAULT_TTL_SECONDS` unless asked otherwise, at most
  `MAX_TTL_SECONDS` (its `exp` is a whole second, so up to one second less), and
  never past the caller's own token;
- it is a different kind of token from an API token, three times over: the JOSE
  header says `typ: runnel-subscribe+jwt`, its `aud` is `runnel:subscribe` (an
  API-token verifier that checks no audience refuses any token that has one), and
  it is signed with a key derived from the node's secret, not with the secret
  itself. So it never passes as an API token, and an API token never passes as it;
- it is verified with no leeway: nodes mint and check it, on the same clocks, and a
  stream it opened ends at its `exp` exactly;
- a token bound to another stream answers 404 `not_found`, as an unknown stream of
  the caller's own tenant does: it tells nothing about streams it is not bound to.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import time
from dataclasses import dataclass
from typing import Any

import jwt

from domain.errors import NotFound, Unauthenticated
from domain.principal import Principal, Scope

DEFAULT_TTL_SECONDS = 60
MAX_TTL_SECONDS = 300
TOKEN_TYPE = "runnel-subscribe+jwt"
AUDIENCE = "runnel:subscribe"
ALGORITHM = "HS256"
_KEY_LABEL = b"runnel subscribe tokens"
_CLAIMS = ("sub", "ten", "run", "stm", "exp", "aud")


@dataclass(frozen=True)
class SubscribeGrant:
    token: str
    expires_at: float
    """Seconds since the epoch."""


class SubscribeTokens:
    """Mints and verifies subscribe tokens with a key derived from the node's secret (the
    same on every node of a deployment, so any node verifies what another minted)."""

    def __init__(self, secret: str) -> None:
        self._key = hmac.new(secret.encode(), _KEY_LABEL, hashlib.sha256).hexdigest()

    def mint(self, caller: Principal, run_id: str, stream_id: str,
             ttl_seconds: int = DEFAULT_TTL_SECONDS, now: float | None = None) -> SubscribeGrant:
        """A token for a caller the route has already allowed to read the stream."""
        if not 0 < ttl_seconds <= MAX_TTL_SECONDS:
            raise ValueError(f"ttl_seconds must be 1-{MAX_TTL_SECONDS}")
        issued = time.time() if now is None else now
        expires = int(issued) + ttl_seconds  # whole seconds, so at most `ttl_seconds`
        if caller.expires_at is not None:
            expires = min(expires, int(caller.expires_at))
        if expires <= issued:
            raise Unauthenticated("token expired")
        claims: dict[str, Any] = {
            "sub": caller.sub, "ten": caller.tenant, "run": run_id, "stm": stream_id,
            "aud": AUDIENCE, "iat": int(issued), "exp": expires,
            "jti": secrets.token_hex(8),
        }
        if caller.token_id is not None:
            claims["pjt"] = caller.token_id
        token = jwt.encode(claims, self._key, algorithm=ALGORITHM,
                           headers={"typ": TOKEN_TYPE})
        return SubscribeGrant(token, float(expires))

    def verify(self, token: str, run_id: str, stream_id: str) -> Principal:
        """The read-only principal of a valid subscribe token for this stream."""
        if not is_subscribe_token(token):
            raise Unauthenticated("access_token takes only a subscribe token "
                                  "(POST …/subscribe-token)")
        try:
            claims = jwt.decode(token, self._key, algorithms=[ALGORITHM], audience=AUDIENCE,
                                options={"require": list(_CLAIMS)})
        except jwt.ExpiredSignatureError:
            raise Unauthenticated("subscribe token expired") from None
        except jwt.PyJWTError:
            raise Unauthenticated("not a valid subscribe token") from None
        if not all(isinstance(claims[name], str) for name in ("sub", "ten", "run", "stm")):
            raise Unauthenticated("not a valid subscribe token")
        parent = claims.get("pjt")
        if parent is not None and not isinstance(parent, str):
            raise Unauthenticated("not a valid subscribe token")
        if (claims["run"], claims["stm"]) != (run_id, stream_id):
            raise NotFound("stream not found")
        return Principal(sub=claims["sub"], tenant=claims["ten"],
                         scopes=frozenset({Scope.READ.value}), runs=frozenset({run_id}),
                         token_id=claims.get("jti"), expires_at=float(claims["exp"]),
                         parent_token_id=parent)


def is_subscribe_token(token: str) -> bool:
    """Whether the token SAYS it is a subscribe token (its unverified JOSE header); only
    `SubscribeTokens.verify` decides whether it is one."""
    try:
        return bool(jwt.get_unverified_header(token).get("typ") == TOKEN_TYPE)
    except jwt.PyJWTError:
        return False
