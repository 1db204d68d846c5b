"""Who is calling: the `Authorization: Bearer <jwt>` header, turned into a `Principal`.

No token, a malformed header, a bad signature or an expired token are all 401
`unauthenticated`. Browsers cannot set headers on `EventSource`, so the
subscribe route (and only it) also takes a credential from `?access_token=`:
only a short-lived subscribe token bound to that stream (`SubscribeAuthenticator`,
ADR 0023); anywhere else that parameter is ignored. Scope, tenant isolation, run binding
and pinned readers/writers are the use cases' business, not this module's.

A token is checked by the `TokenVerifier` the settings describe (algorithms, keys,
lifetime, issuer, audience: ADR 0024), then against this node's copy of the
revoked-token list: a subscribe token is refused when its own `jti` or its parent's is
revoked (ADR 0060); neither check waits on the network or the database per request.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from typing import Annotated, Any

from litestar import Request
from litestar.params import QueryParameter

from application.ports.access import RevokedTokens
from application.ports.clock import Clock
from application.revocations import RevocationList
from domain.errors import Unauthenticated
from domain.principal import Principal
from entrypoints.auth.jwks import CachedUrlKeys, StaticKeys
from entrypoints.auth.subscribe_tokens import SubscribeTokens, is_subscribe_token
from entrypoints.auth.token_cache import VerifiedTokens
from entrypoints.auth.tokens import PublicKeys, TokenPolicy, TokenVerifier
from entrypoints.composition.settings import Settings
from entrypoints.observability.request_context import note_tenant

MAX_TOKEN_LENGTH = 4096


class Authenticator:
    def __init__(self, secret: str, verifier: TokenVerifier | None = None,
                 url_keys: CachedUrlKeys | None = None,
                 revoked: RevocationList | None = None) -> None:
        self._secret = secret
        """The node's HS256 secret (it signs what the node mints)."""
        self._verified = VerifiedTokens(verifier or TokenVerifier(TokenPolicy(), secret))
        """Each token verified once while it stays valid (ADR 0044); revocation below is
        checked on every request."""
        self._url_keys = url_keys
        self.revoked = revoked or RevocationList()

    def __deepcopy__(self, _memo: dict[int, Any]) -> Authenticator:
        """Litestar deep-copies the dependencies it is given, bound methods with their
        instance; every copy must consult the one revoked-token list and key set."""
        return self

    @classmethod
    def from_settings(cls, settings: Settings) -> Authenticator:
        """Raises `ConfigurationError` for a JWKS file that cannot be used."""
        secret = settings.resolved_jwt_secret()
        algorithms = settings.token_algorithms()
        policy = TokenPolicy(algorithms=algorithms,
                             max_lifetime_seconds=settings.max_token_lifetime_seconds,
                             issuer=settings.jwt_issuer, audience=settings.jwt_audience)
        url_keys = None
        keys: PublicKeys | None = None
        if settings.jwt_jwks_file is not None:
            keys = StaticKeys.from_file(settings.jwt_jwks_file)
        elif settings.jwt_jwks_url is not None:
            keys = url_keys = CachedUrlKeys(settings.jwt_jwks_url,
                                            settings.jwt_jwks_cache_seconds,
                                            settings.jwt_jwks_min_refresh_seconds)
        verifier = TokenVerifier(policy, secret if "HS256" in algorithms else None, keys)
        return cls(secret, verifier, url_keys)

    @asynccontextmanager
    async def kept_current(self, revoked: RevokedTokens, clock: Clock,
                           refresh_seconds: float) -> AsyncIterator[Authenticator]:
        """The key set and the revoked-token list read before the node serves, and kept
        fresh in the background until exit."""
        async with AsyncExitStack() as stack:
            if self._url_keys is not None:
                await stack.enter_async_context(self._url_keys.kept_fresh())
            await stack.enter_async_context(
                self.revoked.kept_fresh(revoked, clock, refresh_seconds))
            yield self

    def from_header(self, request: Request[Any, Any, Any]) -> Principal:
        """Litestar dependency for every authenticated route."""
        return self._verify(_bearer(request.headers.get("authorization")))

    def _verify(self, token: str | None) -> Principal:
        if not token:
            raise Unauthenticated("a bearer token is required")
        if len(token) > MAX_TOKEN_LENGTH:
            raise Unauthenticated("token is too long")
        return self.admitted(self._verified.verify(token))

    def admitted(self, principal: Principal) -> Principal:
        """A verified principal, unless its token or its parent token is revoked."""
        if self.revoked.refuses_principal(principal):
            raise Unauthenticated("token has been revoked")
        note_tenant(principal.tenant)
        return principal


AccessToken = Annotated[str | None, QueryParameter(
    description="A subscribe token for this stream (`POST …/subscribe-token`), for clients "
                "that cannot set headers (EventSource); no other token is accepted here. The "
                "Authorization header wins.")]
"""The subscribe route's `?access_token=` parameter."""


class SubscribeAuthenticator:
    """The subscribe route's credentials: the Authorization header takes an API token or a
    subscribe token bound to this stream; `?access_token=` takes only the latter."""

    def __init__(self, api: Authenticator, grants: SubscribeTokens) -> None:
        self._api = api
        self._grants = grants

    def from_header_or_query(
        self,
        request: Request[Any, Any, Any],
        access_token: AccessToken = None,
    ) -> Principal:
        """The subscribe route's principal (its `caller` dependency, `callers.py`)."""
        header = request.headers.get("authorization")
        token = _bearer(header) if header is not None else access_token
        if not token:
            raise Unauthenticated("a bearer token or a subscribe token is required")
        if len(token) > MAX_TOKEN_LENGTH:
            raise Unauthenticated("token is too long")
        if header is not None and not is_subscribe_token(token):
            return self._api.from_header(request)
        params = request.path_params
        return self._api.admitted(
            self._grants.verify(token, str(params["run_id"]), str(params["stream_id"])))


def _bearer(header: str | None) -> str | None:
    if header is None:
        return None
    scheme, _, token = header.strip().partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        raise Unauthenticated("the Authorization header must be 'Bearer <token>'")
    return token.strip()
