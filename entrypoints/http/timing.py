"""Per-route latency: the time from the request to its response headers, by route template.

For a subscription that is the time to open the stream, which is what a reader
waits for; how long it then stays open is not latency.
"""

from __future__ import annotations

import time

from litestar.enums import ScopeType
from litestar.types import ASGIApp, Message, Receive, Scope, Send

from entrypoints.metrics import Metrics


def route_timing(metrics: Metrics) -> type:
    class RouteTiming:
        def __init__(self, app: ASGIApp) -> None:
            self.app = app

        async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
            if scope["type"] != ScopeType.HTTP:
                await self.app(scope, receive, send)
                return
            started = time.perf_counter()
            method = scope.get("method", "")

            async def timed_send(message: Message) -> None:
                if message["type"] == "http.response.start":
                    metrics.latency.labels(
                        method=method, route=scope.get("path_template", "unmatched"),
                        status=str(message["status"]),
                    ).observe(time.perf_counter() - started)
                await send(message)

            await self.app(scope, receive, timed_send)

    return RouteTiming
