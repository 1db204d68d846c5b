"""The request rules the outermost layer applies to every HTTP request (ADR 0049).

`RequestIds` (`request_ids.py`) is the one pure-ASGI layer between the event-stream
transport and Litestar; it applies these rules in the same call and the same `send`
wrapper, so no route has Litestar middleware:

- **Header limit.** Request headers are bounded before any work: their total size is
  checked on arrival. The ASGI server refuses anything larger than twice this ceiling
  while parsing (plain 400); between the two, the layer answers 431
  `headers_too_large` as problem+json (`problems.send_problem`), before Litestar sees
  the request. Body sizes are bounded per route by Litestar's `request_max_body_size`
  (413 `too_large`), before the body is read.
- **Route timing.** Per-route latency: the time from the request to its response
  headers, by route template (`unmatched` for an unknown path) and method (`other` for
  one a client invented: labels never take a value a client chose). For a subscription that
  is the time to open the stream, which is what a reader waits for; how long it then
  stays open is not latency.
- **Client disconnects.** Only a request that announces a body (`Content-Length` above
  0, or `Transfer-Encoding`) can be cut mid-body; a disconnect before its last body
  message raises `ClientDisconnected` from `receive`, counted once in
  `runnel_http_client_disconnects_total`. It is raised inside Litestar's call, so the
  error table answers it 499 `client_disconnected` (nobody reads it): never logged as
  an error, never a 500 in the latency histogram. Any other disconnect (a reader leaving
  an event stream, a client gone after its body arrived) passes through unchanged: it is
  how a stream learns to end.
"""

from __future__ import annotations

from collections.abc import Iterable

from litestar.types import Receive, ReceiveMessage

from entrypoints.http.problems import ClientDisconnected, HeadersTooLarge
from entrypoints.observability.metrics import Metrics

METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "DELETE", "OPTIONS", "PATCH"})
"""The `method` label's values besides `other`."""


class RequestRules:
    def __init__(self, max_header_bytes: int, metrics: Metrics) -> None:
        self.max_header_bytes = max_header_bytes
        self._latency = metrics.latency
        self._disconnects = metrics.client_disconnects

    def refusal(self, headers: Iterable[tuple[bytes, bytes]]) -> HeadersTooLarge | None:
        if sum(len(name) + len(value) + 4 for name, value in headers) > self.max_header_bytes:
            return HeadersTooLarge(self.max_header_bytes)
        return None

    def observe(self, method: str, route: str | None, status: int, seconds: float) -> None:
        """A method outside `METHODS` counts as `other`: a client invents no label value."""
        self._latency.labels(method=method if method in METHODS else "other",
                             route=route or "unmatched", status=str(status)).observe(seconds)

    def watched(self, headers: Iterable[tuple[bytes, bytes]], receive: Receive) -> Receive:
        """`receive`, raising `ClientDisconnected` for a disconnect before the last body
        message of a request that announces a body; `receive` itself otherwise."""
        if not _announces_body(headers):
            return receive
        body_done = False

        async def watched() -> ReceiveMessage:
            nonlocal body_done
            message = await receive()
            if message["type"] == "http.request" and not message.get("more_body", False):
                body_done = True
            elif message["type"] == "http.disconnect" and not body_done:
                body_done = True  # counted once
                self._disconnects.inc()
                raise ClientDisconnected("the client left before its request body arrived")
            return message

        return watched


def _announces_body(headers: Iterable[tuple[bytes, bytes]]) -> bool:
    for name, value in headers:
        if name == b"content-length":
            return value.strip() not in (b"", b"0")
        if name == b"transfer-encoding":
            return True
    return False
