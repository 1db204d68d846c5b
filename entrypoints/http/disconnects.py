"""A client that leaves while its request body is still arriving is a client disconnect.

Rules:
- Only a request that announces a body (`Content-Length` above 0, or
  `Transfer-Encoding`) can be cut mid-body; a disconnect before its last body
  message raises `ClientDisconnected` from `receive`, counted once in
  `runnel_http_client_disconnects_total`.
- The error table answers it 499 `client_disconnected` (nobody reads it):
  never logged as an error, never a 500 in the latency histogram.
- Any other disconnect (a reader leaving an event stream, a client gone after
  its body arrived) passes through unchanged: it is how a stream learns to end.
"""

from __future__ import annotations

from litestar.enums import ScopeType
from litestar.types import ASGIApp, Receive, ReceiveMessage, Scope, Send

from entrypoints.http.problems import ClientDisconnected
from entrypoints.metrics import Metrics


def _announces_body(scope: Scope) -> bool:
    for name, value in scope.get("headers", ()):
        if name == b"content-length":
            return value.strip() not in (b"", b"0")
        if name == b"transfer-encoding":
            return True
    return False


def client_disconnects(metrics: Metrics) -> type:
    class ClientDisconnects:
        def __init__(self, app: ASGIApp) -> None:
            self.app = app

        async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
            if scope["type"] != ScopeType.HTTP or not _announces_body(scope):
                await self.app(scope, receive, send)
                return
            body_done = False

            async def watched() -> ReceiveMessage:
                nonlocal body_done
                message = await receive()
                if message["type"] == "http.request" and not message.get("more_body", False):
                    body_done = True
                elif message["type"] == "http.disconnect" and not body_done:
                    body_done = True  # counted once
                    metrics.client_disconnects.inc()
                    raise ClientDisconnected("the client left before its request body arrived")
                return message

            await self.app(scope, watched, send)

    return ClientDisconnects
