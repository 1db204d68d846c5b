"""Connections bounded at the transport: caps, head size and deadlines, in uvicorn's protocol.

`bounded_protocol(budget)` is the HTTP protocol `runnel serve` gives uvicorn
(`http=`): uvicorn's httptools protocol with the bounds the parser itself does
not keep. One `ConnectionBudget` per server counts what is open (ADR 0021).

Rules:
- A connection is admitted when it opens, or refused: past `max_connections`
  open request connections, or `max_per_address` from its client address, it
  is answered a short 503 problem `too_many_connections` (`Retry-After: 1`)
  and closed without reading a request: once the client closes, after
  `REFUSAL_LINGER_SECONDS`, or at once while `MAX_LINGERING` refusals linger.
  Refused connections never count against a cap. A connection whose peer is a
  trusted proxy (`trusted_proxies`, ADR 0033) is held to `max_connections`
  only: it carries many clients, and the proxy limits per client.
- The head of a request (request line and headers) is counted as it arrives:
  past `max_head_bytes` the connection is answered 431 `headers_too_large`
  and closed. Nothing past the bound is buffered beyond one read.
- Header deadline: the head must be complete within `header_timeout` of the
  connection's opening, or of the first byte of its next request. Past it the
  connection is closed, with a 408 `request_timeout` if any byte came. A
  silent socket is closed as well.
- Body deadline: once the head is in, the body must be complete within
  `body_timeout` plus one second per `min_body_rate` bytes received so far
  (a minimum average rate after a grace). Time during which the server itself
  stopped reading (the app has not taken the body yet), or has not yet sent the
  `100 Continue` a client asked for, does not count. Past it
  the connection is closed (408 if no response started).
- Idle: a kept-alive connection without a new request is closed after
  `idle_timeout` (uvicorn's keep-alive timer, set from the same limits).
- Event streams: a subscription request (`GET …/subscribe`) moves its
  connection out of the request pool (global and per address) into the stream
  pool, capped by `max_streams` (503 `too_many_connections` past it); it goes
  back when its last subscription has unwound. The next subscription on a
  kept-alive (or pipelined) connection can start while the last one is still
  returning: it keeps the connection's slot rather than asking for another.
  No deadline applies while a response is being sent, so a stream is never
  cut by them.
"""

from __future__ import annotations

import asyncio
import json
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from http import HTTPStatus
from typing import Any, Literal

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from entrypoints.auth.trusted_proxies import TrustedProxies
from entrypoints.composition.settings import Settings

Pool = Literal["request", "stream"]
SUBSCRIBE_SUFFIX = "/subscribe"
REFUSAL_LINGER_SECONDS = 2.0
"""How long a refused connection may go on sending before it is closed: long enough for a
client that sent its request to read the 503 instead of a reset."""
MAX_LINGERING = 100
"""Refused connections left to linger at once; past this a refusal closes at once (a flood of
connections costs no more than this many extra sockets)."""


@dataclass(frozen=True)
class ConnectionLimits:
    max_connections: int
    max_per_address: int
    max_streams: int
    max_head_bytes: int
    header_timeout: float
    body_timeout: float
    min_body_rate: float
    idle_timeout: float
    trusted_proxies: tuple[str, ...] = ()


def connection_limits(settings: Settings) -> ConnectionLimits:
    """The node's bounds; the parser refuses a head over twice the app's header ceiling, so
    the app's own 431 (ADR 0004) answers everything between."""
    return ConnectionLimits(
        max_connections=settings.max_connections,
        max_per_address=settings.max_connections_per_address,
        max_streams=settings.max_sse_connections,
        max_head_bytes=2 * settings.max_header_bytes,
        header_timeout=settings.header_timeout_seconds,
        body_timeout=settings.body_timeout_seconds,
        min_body_rate=settings.min_body_bytes_per_second,
        idle_timeout=settings.idle_timeout_seconds,
        trusted_proxies=settings.trusted_proxies)


class ConnectionBudget:
    """What is open on one server, in two pools, and what was refused or cut (for metrics)."""

    def __init__(self, limits: ConnectionLimits) -> None:
        self.limits = limits
        self.proxies = TrustedProxies(limits.trusted_proxies)
        self.requests = 0
        self.streams = 0
        self.lingering = 0
        self._by_address: Counter[str] = Counter()
        self.refused: Counter[str] = Counter()
        self.cut: Counter[str] = Counter()

    def admit(self, address: str) -> bool:
        """Count a new connection in the request pool, or refuse it (and count why)."""
        if self.requests >= self.limits.max_connections:
            self.refused["connections"] += 1
            return False
        if address in self.proxies:
            self.requests += 1  # a proxy: only the global cap applies
            return True
        if self._by_address[address] >= self.limits.max_per_address:
            self.refused["address"] += 1
            return False
        self.requests += 1
        self._by_address[address] += 1
        return True

    def enter_stream(self, address: str) -> bool:
        """Move an admitted connection into the stream pool, or refuse the stream."""
        if self.streams >= self.limits.max_streams:
            self.refused["streams"] += 1
            return False
        self._leave_requests(address)
        self.streams += 1
        return True

    def leave_stream(self, address: str) -> None:
        """Back into the request pool once its stream ended (never refused: it is open)."""
        self.streams -= 1
        self.requests += 1
        if address not in self.proxies:
            self._by_address[address] += 1

    def release(self, address: str, pool: Pool) -> None:
        if pool == "stream":
            self.streams -= 1
        else:
            self._leave_requests(address)

    def _leave_requests(self, address: str) -> None:
        self.requests -= 1
        if address in self.proxies:
            return
        self._by_address[address] -= 1
        if self._by_address[address] <= 0:
            del self._by_address[address]


class ConnectionMetrics(Collector):
    """The budget's figures at scrape time."""

    def __init__(self, budget: ConnectionBudget) -> None:
        self._budget = budget

    def collect(self) -> Iterator[Metric]:
        open_ = GaugeMetricFamily("runnel_http_connections",
                                  "Open HTTP connections, by pool (request or stream)",
                                  labels=["pool"])
        open_.add_metric(["request"], self._budget.requests)
        open_.add_metric(["stream"], self._budget.streams)
        yield open_
        refused = CounterMetricFamily(
            "runnel_http_connections_refused", "Connections or streams refused with 503 "
            "too_many_connections, by cap (connections, address, streams)", labels=["cap"])
        for cap in ("connections", "address", "streams"):
            refused.add_metric([cap], self._budget.refused[cap])
        yield refused
        cut = CounterMetricFamily(
            "runnel_http_connections_cut", "Connections closed by a transport bound "
            "(header_timeout, body_timeout, headers_too_large)", labels=["reason"])
        for reason in ("header_timeout", "body_timeout", "headers_too_large"):
            cut.add_metric([reason], self._budget.cut[reason])
        yield cut


def limits_problem(status: int, code: str, detail: str, **extra: Any) -> bytes:
    """A whole HTTP/1.1 response carrying a problem document, then `Connection: close`."""
    body = json.dumps({"type": f"urn:runnel:problem:{code}", "title": HTTPStatus(status).phrase,
                       "status": status, "detail": detail, "code": code, **extra}).encode()
    retry = b"retry-after: 1\r\n" if status == 503 else b""
    return b"".join([
        f"HTTP/1.1 {status} {HTTPStatus(status).phrase}\r\n".encode(),
        b"content-type: application/problem+json\r\n", b"referrer-policy: no-referrer\r\n",
        retry,
        f"content-length: {len(body)}\r\n".encode(), b"connection: close\r\n\r\n", body])


TOO_MANY = limits_problem(503, "too_many_connections",
                          "this server has no room for another connection; retry shortly")


def _subscribe_request(scope: Any) -> bool:
    return scope.get("method") == "GET" and str(scope.get("path", "")).endswith(SUBSCRIBE_SUFFIX)


def bounded_protocol(budget: ConnectionBudget) -> type[HttpToolsProtocol]:
    """uvicorn's httptools protocol bound to `budget` (one class per server)."""
    limits = budget.limits

    class BoundedHttpToolsProtocol(HttpToolsProtocol):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            self.timeout_keep_alive = limits.idle_timeout  # type: ignore[assignment]
            inner = self.app

            async def app(scope: Any, receive: Any, send: Any) -> None:
                if not _subscribe_request(scope):
                    await inner(scope, receive, send)
                    return
                if not self._enter_stream():
                    await _refuse_stream(send)
                    return
                try:
                    await inner(scope, receive, send)
                finally:
                    self._leave_stream()

            self.app = app
            self._address = ""
            self._pool: Pool | None = None
            self._subscriptions = 0
            """Subscription cycles not yet unwound: the next one on a kept-alive connection
            may start while the last is still returning, and takes over its slot."""
            self._lingering = False
            self._reading_head = True
            self._head_bytes = 0
            self._head_timer: asyncio.TimerHandle | None = None
            self._body_timer: asyncio.TimerHandle | None = None
            self._body_started = 0.0
            self._body_checked = 0.0
            self._body_credit = 0.0
            self._body_bytes = 0

        # Admission --------------------------------------------------------------------
        def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
            super().connection_made(transport)
            self._address = self.client[0] if self.client else ""
            if not budget.admit(self._address):
                self._refuse()
                return
            self._pool = "request"
            self._arm_head_timer()

        def _refuse(self) -> None:
            self._reading_head = False
            self.transport.write(TOO_MANY)
            if budget.lingering < MAX_LINGERING and self.transport.can_write_eof():
                budget.lingering += 1
                self._lingering = True
                self.transport.write_eof()  # let it read the 503, then it closes
                self.loop.call_later(REFUSAL_LINGER_SECONDS, self._close)
            else:
                self.transport.close()

        def connection_lost(self, exc: Exception | None) -> None:
            if self._lingering:
                budget.lingering -= 1
                self._lingering = False
            if self._pool is not None:
                budget.release(self._address, self._pool)
                self._pool = None
            self._cancel_timers()
            super().connection_lost(exc)

        def eof_received(self) -> None:
            if self._pool is None:
                self._close()

        def _enter_stream(self) -> bool:
            if self._pool == "request":
                if not budget.enter_stream(self._address):
                    return False
                self._pool = "stream"
            self._subscriptions += 1  # in the stream pool already, or gone: the app finds out
            return True

        def _leave_stream(self) -> None:
            self._subscriptions -= 1
            if self._pool == "stream" and self._subscriptions == 0:
                budget.leave_stream(self._address)
                self._pool = "request"

        # The head ---------------------------------------------------------------------
        def data_received(self, data: bytes) -> None:
            if self._pool is None:
                return  # refused: discard until the client closes
            if self._reading_head:
                self._head_bytes += len(data)
            super().data_received(data)
            if self.transport.is_closing():
                return
            # Timers only for what this read left incomplete: a request that arrived whole
            # costs none.
            if self._reading_head:
                if self._head_bytes > limits.max_head_bytes:
                    budget.cut["headers_too_large"] += 1
                    self.transport.write(limits_problem(
                        431, "headers_too_large",
                        f"request headers exceed {limits.max_head_bytes} bytes",
                        limit=limits.max_head_bytes))
                    self._close()
                elif self._head_bytes and self._head_timer is None:
                    self._arm_head_timer()
            elif self._body_timer is None:
                self._body_timer = self.loop.call_later(limits.body_timeout, self._check_body)

        def on_headers_complete(self) -> None:
            self._reading_head = False
            self._cancel_head_timer()
            self._body_started = self._body_checked = self.loop.time()
            self._body_credit = 0.0
            self._body_bytes = 0
            super().on_headers_complete()

        def on_message_complete(self) -> None:
            self._cancel_body_timer()
            self._reading_head = True  # the next request's head
            self._head_bytes = 0
            super().on_message_complete()

        def _arm_head_timer(self) -> None:
            self._head_timer = self.loop.call_later(limits.header_timeout, self._head_late)

        def _head_late(self) -> None:
            self._head_timer = None
            if self.transport.is_closing() or not self._reading_head:
                return
            if self.cycle is not None and not self.cycle.response_complete:
                self._arm_head_timer()  # still answering the previous request: not the client's
                return
            budget.cut["header_timeout"] += 1
            if self._head_bytes:
                self.transport.write(limits_problem(
                    408, "request_timeout",
                    f"request headers not received within {limits.header_timeout:g} s"))
            self._close()

        # The body ---------------------------------------------------------------------
        def on_body(self, body: bytes) -> None:
            self._body_bytes += len(body)
            super().on_body(body)

        def _check_body(self) -> None:
            self._body_timer = None
            if self.transport.is_closing() or self._reading_head:
                return
            now = self.loop.time()
            waiting = self.cycle is not None and self.cycle.waiting_for_100_continue
            if self.flow.read_paused or waiting:  # the app has not taken what came, or not
                self._body_credit += now - self._body_checked  # asked for it: not the client's
            self._body_checked = now
            deadline = (self._body_started + limits.body_timeout + self._body_credit
                        + self._body_bytes / limits.min_body_rate)
            if now < deadline:
                self._body_timer = self.loop.call_later(min(deadline - now, 1.0),
                                                        self._check_body)
                return
            budget.cut["body_timeout"] += 1
            if self.cycle is not None and not self.cycle.response_started:
                self.transport.write(limits_problem(
                    408, "request_timeout",
                    f"request body slower than {limits.min_body_rate:g} bytes/s"))
            self._close()

        # Helpers ----------------------------------------------------------------------
        def _close(self) -> None:
            self._cancel_timers()
            if not self.transport.is_closing():
                self.transport.close()

        def _cancel_head_timer(self) -> None:
            if self._head_timer is not None:
                self._head_timer.cancel()
                self._head_timer = None

        def _cancel_body_timer(self) -> None:
            if self._body_timer is not None:
                self._body_timer.cancel()
                self._body_timer = None

        def _cancel_timers(self) -> None:
            self._cancel_head_timer()
            self._cancel_body_timer()

    return BoundedHttpToolsProtocol


async def _refuse_stream(send: Any) -> None:
    body = json.loads(TOO_MANY.split(b"\r\n\r\n", 1)[1])
    payload = json.dumps({**body, "detail": "this server has no room for another event "
                          "stream; retry shortly"}).encode()
    await send({"type": "http.response.start", "status": 503, "headers": [
        (b"content-type", b"application/problem+json"), (b"retry-after", b"1"),
        (b"content-length", str(len(payload)).encode())]})
    await send({"type": "http.response.body", "body": payload})
