"""What a log line knows about the request it was written for: one context per request.

Rules:
- the HTTP layer opens a `RequestContext` when a request arrives (`http/request_ids.py`)
  and it is the current one, through a contextvar, for everything that request runs:
  every log line written meanwhile carries its id (`log_format.py`);
- the tenant is noted once the bearer token is verified, the route (the path template,
  never the path) once the request is routed, the status once the response starts;
- a task started during a request inherits its context; once the request has finished,
  its lines no longer carry that request's fields.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any


@dataclass
class RequestContext:
    request_id: str
    scope: Mapping[str, Any] = field(default_factory=dict, repr=False)
    """The ASGI scope: the router writes the route template into it."""
    started: float = field(default_factory=time.perf_counter)
    tenant: str | None = None
    status: int | None = None
    duration_ms: float | None = None
    finished: bool = False

    @property
    def route(self) -> str | None:
        """The path template, once the request is routed (None for an unknown path)."""
        template = self.scope.get("path_template")
        return template if isinstance(template, str) else None

    def responded(self, status: int) -> None:
        """The response starts: its status and the time to its headers."""
        self.status = status
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
