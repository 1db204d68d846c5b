"""Who is calling: the `Authorization: Bearer <jwt>` header, turned into a `Principal`.

No token, a malformed header, a bad signature or an expired token are all 401
`unauthenticated`. Browsers cannot set headers on `EventSource`, so the
subscribe route (and only it) also takes a credential from `?access_token=`:
only a short-lived subscribe token bound to that stream (`SubscribeAuthenticator`,
ADR 0023); anywhere else that parameter is ignored. Scope, tenant isolation, run binding
and pinned readers/writers are the use cases' business, not this module's.
"""

from __future__ import annotations

from typing import Annotated, Any

from litestar import Request
from litestar.params import QueryParameter

from domain.errors import Unauthenticated
from domain.principal import Principal
from entrypoints.subscribe_tokens import SubscribeTokens, is_subscribe_token
from entrypoints.tokens import verify_token

MAX_TOKEN_LENGTH = 4096


class Authenticator:
    def __init__(self, secret: str) -> None:
        self._secret = secret

    def from_header(self, request: Request[Any, Any, Any]) -> Principal:
        """Litestar dependency for every authenticated route."""
        return self._verify(_bearer(request.headers.get("authorization")))

    def _verify(self, token: str | None) -> Principal:
        if not token:
            raise Unauthenticated("a bearer token is required")
        if len(token) > MAX_TOKEN_LENGTH:
            raise Unauthenticated("token is too long")
        return verify_token(token, self._secret)


class SubscribeAuthenticator:
    """The subscribe route's credentials: the Authorization header takes an API token or a
    subscribe token bound to this stream; `?access_token=` takes only the latter."""

    def __init__(self, api: Authenticator, grants: SubscribeTokens) -> None:
        self._api = api
        self._grants = grants

    def from_header_or_query(
        self,
        request: Request[Any, Any, Any],
        access_token: Annotated[str | None, QueryParameter(
            description="A subscribe token for this stream (`POST …/subscribe-token`), for "
                        "clients that cannot set headers (EventSource); no other token is "
                        "accepted here. The Authorization header wins.")] = None,
    ) -> Principal:
        """Litestar dependency for the subscribe route."""
        header = request.headers.get("authorization")
        token = _bearer(header) if header is not None else access_token
        if not token:
            raise Unauthenticated("a bearer token or a subscribe token is required")
        if len(token) > MAX_TOKEN_LENGTH:
            raise Unauthenticated("token is too long")
        if header is not None and not is_subscribe_token(token):
            return self._api.from_header(request)
        params = request.path_params
        return self._grants.verify(token, str(params["run_id"]), str(params["stream_id"]))


def _bearer(header: str | None) -> str | None:
    if header is None:
        return None
    scheme, _, token = header.strip().partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        raise Unauthenticated("the Authorization header must be 'Bearer <token>'")
    return token.strip()
