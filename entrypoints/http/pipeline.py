"""The one layer between the event-stream transport and Litestar (ADR 0049).

It does in one pure-ASGI call what three Litestar middlewares did, each with its own
call and `send` or `receive` wrapper (and, since a route had middleware, a second
exception-handling layer that Litestar puts around each route):

- **Header limit.** Request headers are bounded before any work: their total size is
  checked on arrival. The ASGI server refuses anything larger than twice this ceiling
  while parsing (plain 400); between the two, this answers 431 `headers_too_large` as
  problem+json (`send_problem`), before Litestar sees the request. Body sizes are
  bounded per route by Litestar's `request_max_body_size` (413 `too_large`), before
  the body is read.
- **Route timing.** Per-route latency: the time from the request to its response
  headers, by route template. For a subscription that is the time to open the stream,
  which is what a reader waits for; how long it then stays open is not latency.
- **Client disconnects.** Only a request that announces a body (`Content-Length` above
  0, or `Transfer-Encoding`) can be cut mid-body; a disconnect before its last body
  message raises `ClientDisconnected` from `receive`, counted once in
  `runnel_http_client_disconnects_total`, which the error table answers 499
  `client_disconnected` (nobody reads it): never logged as an error, never a 500 in the
  latency histogram. Any other disconnect (a reader leaving an event stream, a client
  gone after its body arrived) passes through unchanged: it is how a stream learns to
  end.

It sees every HTTP request, routed or not (an unknown path is timed as `unmatched`).
A `ClientDisconnected` is raised inside Litestar's call (by the `receive` it was given),
so Litestar's exception handling answers it.
"""

from __future__ import annotations

import time
from collections.abc import Iterable

from litestar.enums import ScopeType
from litestar.types import ASGIApp, Message, Receive, ReceiveMessage, Scope, Send

from entrypoints.http.problems import ClientDisconnected, HeadersTooLarge, send_problem
from entrypoints.metrics import Metrics


def _announces_body(headers: Iterable[tuple[bytes, bytes]]) -> bool:
    for name, value in headers:
        if name == b"content-length":
            return value.strip() not in (b"", b"0")
        if name == b"transfer-encoding":
            return True
    return False


class RequestPipeline:
    def __init__(self, app: ASGIApp, max_header_bytes: int, metrics: Metrics) -> None:
        self.app = app
        self.max_header_bytes = max_header_bytes
        self.latency = metrics.latency
        self.disconnects = metrics.client_disconnects

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != ScopeType.HTTP:
            await self.app(scope, receive, send)
            return
        method = scope["method"]
        headers = scope["headers"]
        started = time.perf_counter()

        async def timed_send(message: Message) -> None:
            if message["type"] == "http.response.start":
                self.latency.labels(
                    method=method, route=scope.get("path_template", "unmatched"),
                    status=str(message["status"]),
                ).observe(time.perf_counter() - started)
            await send(message)

        if sum(len(name) + len(value) + 4 for name, value in headers) > self.max_header_bytes:
            await send_problem(timed_send, HeadersTooLarge(self.max_header_bytes))
            return
        if not _announces_body(headers):
            await self.app(scope, receive, timed_send)
            return
        body_done = False

        async def watched() -> ReceiveMessage:
            nonlocal body_done
            message = await receive()
            if message["type"] == "http.request" and not message.get("more_body", False):
                body_done = True
            elif message["type"] == "http.disconnect" and not body_done:
                body_done = True  # counted once
                self.disconnects.inc()
                raise ClientDisconnected("the client left before its request body arrived")
            return message

        await self.app(scope, watched, timed_send)
