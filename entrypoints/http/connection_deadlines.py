"""The head bound and the header and body deadlines, in uvicorn's httptools protocol
(ADR 0021): `DeadlinedHttpToolsProtocol`, the base of `bounded_protocol.py`'s.

Rules:
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
- No deadline applies while a response is being sent, so a stream is never cut by
  them. Each cut is counted in the budget (`cut`, by reason).
- Timers exist only for what a read left incomplete: a request that arrived whole
  costs none; the header deadline of a new connection starts when the subclass keeps
  it (`_start_head_deadline`), so a refused one costs no timer.
"""

from __future__ import annotations

import asyncio
from typing import Any, ClassVar

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from entrypoints.http.connections import ConnectionBudget, ConnectionLimits
from entrypoints.http.transport_problems import limits_problem


class DeadlinedHttpToolsProtocol(HttpToolsProtocol):
    """uvicorn's httptools protocol held to `budget.limits`; a subclass per server sets
    `budget`."""

    budget: ClassVar[ConnectionBudget]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.timeout_keep_alive = self.limits.idle_timeout  # type: ignore[assignment]
        self._reading_head = True
        self._head_bytes = 0
        self._head_timer: asyncio.TimerHandle | None = None
        self._body_timer: asyncio.TimerHandle | None = None
        self._body_started = 0.0
        self._body_checked = 0.0
        self._body_credit = 0.0
        self._body_bytes = 0

    @property
    def limits(self) -> ConnectionLimits:
        return self.budget.limits

    def connection_lost(self, exc: Exception | None) -> None:
        self._cancel_timers()
        super().connection_lost(exc)

    # The head ---------------------------------------------------------------------
    def data_received(self, data: bytes) -> None:
        if self._reading_head:
            self._head_bytes += len(data)
        super().data_received(data)
        if self.transport.is_closing():
            return
        limits = self.limits
        if self._reading_head:
            if self._head_bytes > limits.max_head_bytes:
                self.budget.cut["headers_too_large"] += 1
                self.transport.write(limits_problem(
                    431, "headers_too_large",
                    f"request headers exceed {limits.max_head_bytes} bytes",
                    limit=limits.max_head_bytes))
                self._close()
            elif self._head_bytes and self._head_timer is None:
                self._start_head_deadline()
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

    def _start_head_deadline(self) -> None:
        self._head_timer = self.loop.call_later(self.limits.header_timeout, self._head_late)

    def _head_late(self) -> None:
        self._head_timer = None
        if self.transport.is_closing() or not self._reading_head:
            return
        if self.cycle is not None and not self.cycle.response_complete:
            self._start_head_deadline()  # still answering the previous request: not the client's
            return
        self.budget.cut["header_timeout"] += 1
        if self._head_bytes:
            self.transport.write(limits_problem(
                408, "request_timeout",
                f"request headers not received within {self.limits.header_timeout:g} s"))
        self._close()

    # The body ---------------------------------------------------------------------
    def on_body(self, body: bytes) -> None:
        self._body_bytes += len(body)
        super().on_body(body)

    def _check_body(self) -> None:
        self._body_timer = None
        if self.transport.is_closing() or self._reading_head:
            return
        limits = self.limits
        now = self.loop.time()
        waiting = self.cycle is not None and self.cycle.waiting_for_100_continue
        if self.flow.read_paused or waiting:  # the app has not taken what came, or not
            self._body_credit += now - self._body_checked  # asked for it: not the client's
        self._body_checked = now
        deadline = (self._body_started + limits.body_timeout + self._body_credit
                    + self._body_bytes / limits.min_body_rate)
        if now < deadline:
            self._body_timer = self.loop.call_later(min(deadline - now, 1.0), self._check_body)
            return
        self.budget.cut["body_timeout"] += 1
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
