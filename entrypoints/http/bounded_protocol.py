"""`bounded_protocol(budget)`: the HTTP protocol `runnel serve` gives uvicorn (`http=`),
uvicorn's httptools protocol with the bounds the parser itself does not keep (ADR 0021):
the connection caps here, the head bound and the deadlines in `connection_deadlines.py`.

Rules:
- A connection is admitted when it opens, or refused: past `max_connections`
  open request connections, or `max_per_address` from its client address, it
  is answered a short 503 problem `too_many_connections` (`Retry-After: 1`)
  and closed without reading a request: once the client closes, after
  `REFUSAL_LINGER_SECONDS`, or at once while `MAX_LINGERING` refusals linger.
  Refused connections never count against a cap.
- Event streams: a subscription request (`GET …/subscribe`) moves its
  connection out of the request pool into the stream pool (503
  `too_many_connections` past `max_streams`); it goes back when its last
  subscription has unwound. The next subscription on a kept-alive (or pipelined)
  connection can start while the last one is still returning: it keeps the
  connection's slot rather than asking for another.
- A response's head leaves with its body, in one write (`coalesced_writes.py`).
"""

from __future__ import annotations

import asyncio
from typing import Any

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from entrypoints.http.coalesced_writes import HeadHoldingTransport
from entrypoints.http.connection_deadlines import DeadlinedHttpToolsProtocol
from entrypoints.http.connections import ConnectionBudget, Pool
from entrypoints.http.transport_problems import TOO_MANY, refuse_stream

SUBSCRIBE_SUFFIX = "/subscribe"
REFUSAL_LINGER_SECONDS = 2.0
"""How long a refused connection may go on sending before it is closed: long enough for a
client that sent its request to read the 503 instead of a reset."""
MAX_LINGERING = 100
"""Refused connections left to linger at once; past this a refusal closes at once (a flood of
connections costs no more than this many extra sockets)."""


def bounded_protocol(budget: ConnectionBudget) -> type[HttpToolsProtocol]:
    """uvicorn's httptools protocol bound to `budget` (one class per server)."""

    class BoundedHttpToolsProtocol(AdmittingHttpToolsProtocol):
        pass

    BoundedHttpToolsProtocol.budget = budget
    return BoundedHttpToolsProtocol


def _subscribe_request(scope: Any) -> bool:
    return scope.get("method") == "GET" and str(scope.get("path", "")).endswith(SUBSCRIBE_SUFFIX)


class AdmittingHttpToolsProtocol(DeadlinedHttpToolsProtocol):
    """Admission into the budget's pools, on top of the deadlines."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        inner = self.app

        async def app(scope: Any, receive: Any, send: Any) -> None:
            if not _subscribe_request(scope):
                await inner(scope, receive, send)
                return
            if not self._enter_stream():
                await refuse_stream(send)
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

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self.transport = HeadHoldingTransport(transport, self.loop)  # type: ignore[assignment]
        self._address = self.client[0] if self.client else ""
        if not self.budget.admit(self._address):
            self._refuse()
            return
        self._pool = "request"
        self._start_head_deadline()

    def _refuse(self) -> None:
        self._reading_head = False
        self.transport.write(TOO_MANY)
        if self.budget.lingering < MAX_LINGERING and self.transport.can_write_eof():
            self.budget.lingering += 1
            self._lingering = True
            self.transport.write_eof()  # let it read the 503, then it closes
            self.loop.call_later(REFUSAL_LINGER_SECONDS, self._close)
        else:
            self.transport.close()

    def connection_lost(self, exc: Exception | None) -> None:
        if self._lingering:
            self.budget.lingering -= 1
            self._lingering = False
        if self._pool is not None:
            self.budget.release(self._address, self._pool)
            self._pool = None
        super().connection_lost(exc)

    def eof_received(self) -> None:
        if self._pool is None:
            self._close()

    def data_received(self, data: bytes) -> None:
        if self._pool is None:
            return  # refused: discard until the client closes
        super().data_received(data)

    def _enter_stream(self) -> bool:
        if self._pool == "request":
            if not self.budget.enter_stream(self._address):
                return False
            self._pool = "stream"
        self._subscriptions += 1  # in the stream pool already, or gone: the app finds out
        return True

    def _leave_stream(self) -> None:
        self._subscriptions -= 1
        if self._pool == "stream" and self._subscriptions == 0:
            self.budget.leave_stream(self._address)
            self._pool = "request"
