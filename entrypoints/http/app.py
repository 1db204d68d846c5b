"""The Litestar application: routes, dependencies, error shapes, limits, lifespan.

Dependencies are Litestar's own `Provide`s fed from the node the `NodeHost` runs
(no `@inject` on handlers, so no query parameter can override one).
`create_app` is the application; `create_asgi_app` wraps it in the request layer and
the event-stream transport, which must see the server's own `send` and so sits outside
everything. Pure ASGI layers, each one call per request (ADR 0049).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from importlib.metadata import version
from typing import Any

from litestar import Litestar, Request
from litestar.di import Provide
from litestar.openapi import OpenAPIConfig
from litestar.openapi.spec import Components, SecurityScheme
from litestar.types import ASGIApp

from application.service import RunnelService
from entrypoints.auth.cors import CrossOrigin
from entrypoints.auth.subscribe_tokens import SubscribeTokens
from entrypoints.composition.backend import NodeUnready
from entrypoints.composition.container import NodeHost
from entrypoints.composition.settings import Settings
from entrypoints.http.api_docs import api_docs_plugins, api_docs_router
from entrypoints.http.auth import Authenticator, SubscribeAuthenticator
from entrypoints.http.callers import Callers
from entrypoints.http.connections import ConnectionBudget, ConnectionMetrics
from entrypoints.http.draining import Draining
from entrypoints.http.durable_streams import durable_streams_handlers
from entrypoints.http.handlers.operations import Probe, Scrape
from entrypoints.http.openapi import PublishedRules
from entrypoints.http.pipeline import RequestRules
from entrypoints.http.problems import problem_response
from entrypoints.http.request_ids import RequestIds
from entrypoints.http.routes import api_router, operation_handlers
from entrypoints.http.sse.transport import EventStreamTransport
from entrypoints.observability.metrics_access import MetricsAccess
from entrypoints.observability.scrape import scrape
from entrypoints.observability.tracing import traced

DESCRIPTION = """Durable work-data streams for workflow runs.

Authenticate with `Authorization: Bearer <jwt>` (HS256 locally, RS256 or EdDSA
against a JWKS; claims `sub`, `tenant`, `scopes`, optional `runs`, `exp`, `iat`,
`jti`); `runnel token` mints one. Where a client cannot set headers
(`EventSource`), the subscribe route takes `?access_token=` with a short-lived
subscribe token of that stream (`POST …/subscribe-token`), and no other token. A
subscription ends with `event: end` `{"reason": "token_expired"}` when its token
expires, and `{"reason": "token_revoked"}` when it is revoked. Errors are
`application/problem+json` with a stable `code`."""


def create_app(settings: Settings, host: NodeHost | None = None,
               draining: Draining | None = None) -> Litestar:
    host = host if host is not None else NodeHost(settings)
    draining = draining if draining is not None else Draining()
    metrics = host.metrics
    auth = Authenticator.from_settings(settings)
    subscribe_tokens = SubscribeTokens(settings.resolved_jwt_secret())
    access = MetricsAccess(None if settings.metrics_token is None
                           else settings.metrics_token.get_secret_value())

    def provide_service() -> RunnelService:
        return host.node.service

    def provide_probe() -> Probe:
        probe = host.node.backend.probe

        async def unless_draining() -> None:
            if draining.begun:
                raise NodeUnready("this node is shutting down")
            await probe()

        return unless_draining

    def provide_scrape(request: Request[Any, Any, Any]) -> Scrape:
        access.check(request.headers.get("authorization"))
        return lambda: scrape(metrics, host.node.service, host.node.backend)

    @asynccontextmanager
    async def lifespan(_: Litestar) -> AsyncIterator[None]:
        # The second context is entered after the first: the backend is open by then.
        async with host.running() as node, auth.kept_current(
                node.backend.revoked, node.clock, settings.revocation_refresh_seconds):
            draining.attach(lambda: host.node.service.follower)
            node.service.follower.watch_revocations(auth.revoked)
            yield

    return Litestar(
        route_handlers=[*operation_handlers(),
                        api_router(settings, Callers(
                            auth, SubscribeAuthenticator(auth, subscribe_tokens),
                            provide_service, metrics, subscribe_tokens)),
                        *durable_streams_handlers(settings, auth, lambda: host.node.service,
                                                  lambda: host.node.backend.facade_catalog,
                                                  lambda: host.node.clock, metrics)],
        dependencies={
            "probe": Provide(provide_probe, sync_to_thread=False),
            "scrape": Provide(provide_scrape, sync_to_thread=False),
        },
        exception_handlers={Exception: problem_response},
        request_max_body_size=settings.max_body_bytes,
        lifespan=[lifespan],
        plugins=[PublishedRules()],
        openapi_config=OpenAPIConfig(
            title="Runnel", version=version("runnel"), description=DESCRIPTION, path="/schema",
            render_plugins=api_docs_plugins(), openapi_router=api_docs_router(),
            components=Components(security_schemes={"BearerToken": SecurityScheme(
                type="http", scheme="bearer", bearer_format="JWT")})),
        logging_config=None,
        debug=False,
    )


def create_asgi_app(settings: Settings, connections: ConnectionBudget | None = None,
                    draining: Draining | None = None,
                    host: NodeHost | None = None) -> ASGIApp:
    """What the server runs: the app inside one layer for request ids (every response,
    every log line), the header limit, route timing, client disconnects and CORS
    (`request_ids.py`, `pipeline.py`, `cors.py`); when tracing is on, a server span; and outermost
    the event-stream transport (coalesced writes, stall bound), which so gets the
    server's own `send` and can abort a stalled reader's connection at once;
    `connections`, the server's connection budget, is reported in /metrics; `draining`
    is how the server ends the node's subscriptions before it stops."""
    host = host if host is not None else NodeHost(settings)
    metrics = host.metrics
    if connections is not None:
        metrics.registry.register(ConnectionMetrics(connections))
    app = RequestIds(create_app(settings, host, draining),
                     RequestRules(settings.max_header_bytes, metrics),
                     CrossOrigin(settings.cors_origins, settings.cors_max_age_seconds))
    return EventStreamTransport(traced(app), settings.sse_stall_seconds,
                                on_stall=metrics.stalled.inc,
                                direct_writes=settings.sse_direct_writes)
