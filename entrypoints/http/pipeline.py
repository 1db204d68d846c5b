"""The one middleware layer inside Litestar, for every routed request (ADR 0049).

It does in one pure-ASGI call what three layers did, each with its own call and `send`
or `receive` wrapper:

- **Header limit.** Request headers are bounded before any work: their total size is
  checked on arrival. The ASGI server refuses anything larger than twice this ceiling
  while parsing (plain 400); between the two, this answers 431 `headers_too_large` as
  problem+json. Body sizes are bounded per route by Litestar's `request_max_body_size`
  (413 `too_large`), before the body is read.
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

It sits inside Litestar's exception middleware, so its refusals are problem+json.
"""

from __future__ import annotations

import time
from collections.abc import Iterable

from litestar.enums import ScopeType
from litestar.types import ASGIApp, Message, Receive, ReceiveMessage, Scope, Send

from entrypoints.http.problems import ClientDisconnected, HeadersTooLarge
from entrypoints.metrics import Metrics


def _announces_body(headers: Iterable[tuple[bytes, bytes]]) -> bool:
    for name, value in headers:
        if name == b"content-length":
            return value.strip() not in (b"", b"0")
        if name == b"transfer-encoding":
            return True
    return False


def request_pipeline(max_header_bytes: int, metrics: Metrics) -> type:
    latency = metrics.latency
    disconnects = metrics.client_disconnects

    class RequestPipeline:
        def __init__(self, app: ASGIApp) -> None:
            self.app = app

        async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
            if scope["type"] != ScopeType.HTTP:
                await self.app(scope, receive, send)
                return
            method = scope["method"]
            headers = scope["headers"]
            if sum(len(name) + len(value) + 4 for name, value in headers) > max_header_bytes:
                raise HeadersTooLarge(max_header_bytes)
            started = time.perf_counter()

            async def timed_send(message: Message) -> None:
                if message["type"] == "http.response.start":
                    latency.labels(
                        method=method, route=scope.get("path_template", "unmatched"),
                        status=str(message["status"]),
                    ).observe(time.perf_counter() - started)
                await send(message)

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
                    disconnects.inc()
                    raise ClientDisconnected("the client left before its request body arrived")
                return message

            await self.app(scope, watched, timed_send)

    return RequestPipeline
