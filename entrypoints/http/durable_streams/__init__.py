"""The Durable Streams protocol as a second face over the same streams (ADR 0041):
`/v1/stream/{path}` beside the native API, answering as the protocol says. Cross-origin
access is the native API's, decided in one place (`entrypoints/auth/cors.py`, ADR 0062): a
preflight never reaches `dispatch`."""

from __future__ import annotations

import ipaddress
import logging
import time
from collections.abc import Callable
from typing import Any

from litestar import Request, Response, route
from litestar.handlers import HTTPRouteHandler
from litestar.params import FromPath

from application.durable_streams.facade import DurableStreams
from application.service import RunnelService
from domain.principal import Principal, Scope
from entrypoints.composition.settings import ConfigurationError, Settings
from entrypoints.http.auth import Authenticator
from entrypoints.http.durable_streams.handlers import PREFIX, Facade, facade_error
from entrypoints.http.problems import problem_response
from entrypoints.http.sse.subscription import release_on_exit
from entrypoints.observability.metrics import Metrics

log = logging.getLogger("runnel.durable_streams")

COMMON_HEADERS = {
    "x-content-type-options": "nosniff",
    "cross-origin-resource-policy": "cross-origin",
}


def refuse_unsafe_binding(settings: Settings, host: str) -> str | None:
    """The warning to print when unauthenticated facade requests are bound to a tenant;
    raises ValueError unless the node listens on loopback only."""
    tenant = settings.durable_streams_anonymous_tenant
    if tenant is None:
        return None
    try:
        loopback = host == "localhost" or ipaddress.ip_address(host).is_loopback
    except ValueError:
        loopback = False
    if not loopback:
        raise ConfigurationError("RUNNEL_DURABLE_STREAMS_ANONYMOUS_TENANT is for conformance "
                                 f"runs on loopback only; this node listens on {host}")
    return (f"!!! RUNNEL_DURABLE_STREAMS_ANONYMOUS_TENANT is set: requests WITHOUT A TOKEN on "
            f"{PREFIX}/ act in tenant {tenant!r} (conformance runs only; never in production)")


def durable_streams_handlers(settings: Settings, auth: Authenticator,
                             service: Callable[[], RunnelService],
                             catalog: Callable[[], Any], clock: Callable[[], Any],
                             metrics: Metrics) -> list[Any]:
    anonymous = settings.durable_streams_anonymous_tenant
    facades: list[Facade] = []

    def principal_of(request: Request[Any, Any, Any]) -> Principal:
        if anonymous is not None and request.headers.get("authorization") is None:
            return Principal(sub="anonymous", tenant=anonymous,
                             scopes=frozenset({Scope.READ.value, Scope.WRITE.value}))
        return auth.from_header(request)

    def still_valid(principal: Principal) -> bool:
        expires_at = principal.expires_at
        return (not auth.revoked.refuses_principal(principal)
                and (expires_at is None or time.time() < expires_at))

    def facade() -> Facade:
        if not facades:
            streams = DurableStreams(service(), catalog(), clock(),
                                     settings.durable_streams_templates)
            facades.append(Facade(streams, principal_of, clock(),
                                  settings.durable_streams_long_poll_seconds, metrics,
                                  still_valid))
        return facades[0]

    async def dispatch(request: Request[Any, Any, Any], path: FromPath[str]) -> Response[Any]:
        method = request.method
        path = path.removeprefix("/")
        try:
            if method == "OPTIONS":
                answer: Response[Any] = Response(None, status_code=204)
            elif method == "PUT":
                answer = await facade().create(request, path)
            elif method == "POST":
                answer = await facade().append(request, path)
            elif method == "HEAD":
                answer = await facade().head(request, path)
            elif method == "DELETE":
                answer = await facade().delete(request, path)
            else:
                answer = await facade().read(request, path)
        except Exception as exc:  # every answer gets the headers below, refusals too
            answer = facade_error(exc) or problem_response(request, exc)
        for name, value in COMMON_HEADERS.items():
            answer.headers.setdefault(name, value)
        return answer

    handler: HTTPRouteHandler = route(
        PREFIX + "/{path:path}", http_method=["GET", "PUT", "POST", "DELETE", "HEAD", "OPTIONS"],
        include_in_schema=False, request_max_body_size=settings.max_append_body_bytes,
        middleware=[release_on_exit],
    )(dispatch)
    return [handler]
