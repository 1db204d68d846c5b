"""What a log line knows about the request it was written for: one context per request.

Rules:
- the HTTP layer opens a `RequestContext` when a request arrives (`http/request_ids.py`)
  and it is the current one, through a contextvar, for everything that request runs:
  every log line written meanwhile carries its id (`log_format.py`);
- the tenant is noted once the bearer token is verified, the route (the path template,
  never the path) and the status once the response starts;
- a task started during a request inherits its context; once the request has finished,
  its lines no longer carry that request's fields.
"""

from __future__ import annotations

import time
from contextvars import ContextVar
from dataclasses import dataclass, field


@dataclass
class RequestContext:
    request_id: str
    started: float = field(default_factory=time.perf_counter)
    tenant: str | None = None
    route: str | None = None
    status: int | None = None
    duration_ms: float | None = None
    finished: bool = False

    def responded(self, status: int, route: str | None) -> None:
        """The response starts: its status, the route and the time to its headers."""
        self.status = status
        self.route = route
        self.duration_ms = round((time.perf_counter() - self.started) * 1000, 3)


_CURRENT: ContextVar[RequestContext | None] = ContextVar("runnel_request", default=None)


def current_request() -> RequestContext | None:
    """The request being handled, or None outside one (and after it finished)."""
    context = _CURRENT.get()
    return None if context is None or context.finished else context


def note_tenant(tenant: str) -> None:
    context = current_request()
    if context is not None:
        context.tenant = tenant


def enter_request(context: RequestContext) -> object:
    """Make `context` the current one; the returned token is for `leave_request`."""
    return _CURRENT.set(context)


def leave_request(token: object) -> None:
    context = _CURRENT.get()
    if context is not None:
        context.finished = True
    _CURRENT.reset(token)  # type: ignore[arg-type]
