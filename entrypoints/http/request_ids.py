"""Every request has an id: the client's `X-Request-ID` when it is safe, a fresh one otherwise.

Rules:
- an incoming `X-Request-ID` is kept when it is 1 to 128 characters of
  `[A-Za-z0-9._:-]` (no `/`: it cannot pass for a `/runs/…` path) and shaped like
  no token; anything else (too long, other characters, a JWT) is replaced by a
  fresh uuid4 hex, silently: the client learns the id it got from the response;
- the id is echoed as `X-Request-ID` on every response the application sends:
  routes, problems, the 404 of an unknown path, event streams; with it goes
  `Referrer-Policy: no-referrer` (`referrer.py`), in the same pass over the headers;
- while the request is handled it is the current `RequestContext`, so every log
  line carries it (`request_context.py`), and a 5xx problem body names it;
- this wraps the whole application (inside the event-stream transport, which must see
  the server's own `send`), so it sees every request. The transport's own refusals
  (`connections.py`: 503, 431, 408) come before any request exists and carry none;
- given `RequestRules`, it also applies the header limit, route timing and the
  client-disconnect watch (`pipeline.py`): one layer, one `send` wrapper (ADR 0049);
- given a `CrossOrigin` policy, it answers preflights itself and adds the CORS headers
  to every other response, for the native API and the facade alike (`cors.py`).
"""

from __future__ import annotations

import re
import time
import uuid

from litestar.enums import ScopeType
from litestar.types import (
    ASGIApp,
    HTTPResponseBodyEvent,
    HTTPResponseStartEvent,
    Message,
    Receive,
    Scope,
    Send,
)

from entrypoints.auth.cors import CrossOrigin
from entrypoints.auth.token_redaction import redact_tokens
from entrypoints.http.pipeline import RequestRules
from entrypoints.http.problems import send_problem
from entrypoints.http.referrer import HEADER as REFERRER
from entrypoints.observability import tracing
from entrypoints.observability.request_context import RequestContext, enter_request, leave_request

HEADER = b"x-request-id"
OWN_HEADERS = (HEADER, REFERRER[0])
"""What this layer sets on every response, replacing any value from within."""
MAX_LENGTH = 128
_SAFE = re.compile(rf"[A-Za-z0-9._:-]{{1,{MAX_LENGTH}}}")


def accepted_request_id(raw: bytes | None) -> str:
    """The client's id when it is safe to log and echo, else a fresh one."""
    if raw is not None and len(raw) <= MAX_LENGTH:
        value = raw.decode("latin-1")
        if _SAFE.fullmatch(value) and redact_tokens(value) == value:
            return value
    return uuid.uuid4().hex


def _header(scope: Scope, name: bytes) -> bytes | None:
    for key, value in scope.get("headers", ()):
        if key.lower() == name:
            return bytes(value)
    return None


class RequestIds:
    """The outermost layer of the application; with `rules`, also the header limit, route
    timing and client-disconnect watch (`pipeline.py`), in the same call."""

    def __init__(self, app: ASGIApp, rules: RequestRules | None = None,
                 cors: CrossOrigin | None = None) -> None:
        self.app = app
        self.rules = rules
        self.cors = cors

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != ScopeType.HTTP:
            await self.app(scope, receive, send)
            return
        context = RequestContext(accepted_request_id(_header(scope, HEADER)), scope)
        echoed = (HEADER, context.request_id.encode())
        method = str(scope.get("method", ""))
        rules, cors = self.rules, self.cors

        async def send_with_id(message: Message) -> None:
            if message["type"] == "http.response.start":
                context.responded(message["status"])
                if rules is not None:
                    rules.observe(method, context.route, message["status"],
                                  time.perf_counter() - context.started)
                tracing.name_server_span(method, context.route)
                headers = [(k, v) for k, v in message.get("headers", ())
                           if k.lower() not in OWN_HEADERS]
                if cors is not None:
                    headers = cors.headers(scope["headers"], headers)
                message = {**message, "headers": [*headers, echoed, REFERRER]}
            await send(message)

        token = enter_request(context)
        try:
            if rules is None:
                await self.app(scope, receive, send_with_id)
            elif (refusal := rules.refusal(scope["headers"])) is not None:
                await send_problem(send_with_id, refusal)
            elif cors is not None and (
                    answer := cors.preflight(method, scope["headers"])) is not None:
                start: HTTPResponseStartEvent = {"type": "http.response.start", "status": 204,
                                                 "headers": answer}
                await send_with_id(start)
                end: HTTPResponseBodyEvent = {"type": "http.response.body", "body": b"",
                                              "more_body": False}
                await send_with_id(end)
            else:
                await self.app(scope, rules.watched(scope["headers"], receive), send_with_id)
        finally:
            leave_request(token)
