"""What an API handler needs, resolved in one synchronous step (ADR 0049).

Litestar resolves the dependencies of one batch concurrently, in an anyio task group,
whenever a handler names more than one: a group spawned and joined per request, for
values that are all at hand. The routes of records, streams, consumers and lifecycle
name one dependency instead, `caller`, which verifies the bearer token
(`Authenticator.from_header`: the same check as `principal`, token cache and revocation
included) and hands over the node's service and metrics with it. Scope, tenant and run
checks stay with the use cases, as on every route.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from litestar import Request

from application.service import RunnelService
from domain.principal import Principal
from entrypoints.http.auth import Authenticator
from entrypoints.metrics import Metrics


@dataclass(frozen=True, slots=True)
class Caller:
    principal: Principal
    service: RunnelService
    metrics: Metrics


def caller_provider(auth: Authenticator, service: Callable[[], RunnelService],
                    metrics: Metrics) -> Callable[[Request[Any, Any, Any]], Caller]:
    """The `caller` dependency: one call, no await, no task group."""

    def provide_caller(request: Request[Any, Any, Any]) -> Caller:
        return Caller(auth.from_header(request), service(), metrics)

    return provide_caller
