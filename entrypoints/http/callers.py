"""What an API handler needs, resolved in one synchronous step (ADR 0049).

Litestar resolves the dependencies of one batch concurrently, in an anyio task group,
whenever a handler names more than one: a group spawned and joined per request, for
values that are all at hand. Every API route names one dependency instead, `caller`,
which verifies the credentials and hands over the node's service and metrics with them.
Most routes take the bearer token (`Authenticator.from_header`: token cache, length
bound and revocation); the subscribe route takes the header or `?access_token=`
(`SubscribeAuthenticator`), and the subscribe-token route's caller carries the minter
as well. Scope, tenant and run checks stay with the use cases, as on every route.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from litestar import Request
from litestar.di import Provide

from application.service import RunnelService
from domain.principal import Principal
from entrypoints.auth.subscribe_tokens import SubscribeTokens
from entrypoints.http.auth import AccessToken, Authenticator, SubscribeAuthenticator
from entrypoints.observability.metrics import Metrics


@dataclass(frozen=True, slots=True)
class Caller:
    principal: Principal
    service: RunnelService
    metrics: Metrics


@dataclass(frozen=True, slots=True)
class Minter:
    """The subscribe-token route's caller: a bearer token's principal and the minter."""

    principal: Principal
    service: RunnelService
    tokens: SubscribeTokens


@dataclass(frozen=True, slots=True)
class Callers:
    """The `caller` dependency of each kind of API route, from the node's parts."""

    auth: Authenticator
    subscribe_auth: SubscribeAuthenticator
    service: Callable[[], RunnelService]
    metrics: Metrics
    tokens: SubscribeTokens

    def bearer(self) -> Provide:
        """Every API route but the two below: the bearer token."""
        auth, service, metrics = self.auth, self.service, self.metrics

        def provide_caller(request: Request[Any, Any, Any]) -> Caller:
            return Caller(auth.from_header(request), service(), metrics)

        return Provide(provide_caller, sync_to_thread=False)

    def subscriber(self) -> Provide:
        """The subscribe route: the header, or a subscribe token in `?access_token=`."""
        authenticate, service, metrics = (self.subscribe_auth.from_header_or_query,
                                          self.service, self.metrics)

        def provide_caller(
            request: Request[Any, Any, Any],
            access_token: AccessToken = None,
        ) -> Caller:
            return Caller(authenticate(request, access_token), service(), metrics)

        return Provide(provide_caller, sync_to_thread=False)

    def minter(self) -> Provide:
        """The subscribe-token route: the bearer token, and the subscribe-token minter."""
        auth, service, tokens = self.auth, self.service, self.tokens

        def provide_caller(request: Request[Any, Any, Any]) -> Minter:
            return Minter(auth.from_header(request), service(), tokens)

        return Provide(provide_caller, sync_to_thread=False)
