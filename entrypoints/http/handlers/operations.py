"""Liveness, readiness and metrics: outside the API prefix, no token needed."""

from __future__ import annotations

import asyncio
import math
from collections.abc import Awaitable, Callable
from typing import Any

from litestar import Response
from litestar.di import NamedDependency

from application.ports import StoreUnavailable
from application.service import RunnelService
from entrypoints.backend import NodeUnready
from entrypoints.http.problems import NotReady
from entrypoints.metrics import Metrics

Probe = Callable[[], Awaitable[None]]
READY_SECONDS = 2.0
"""`/readyz` answers within this, whatever the database does."""
PENDING_READ_SECONDS = 2.0
"""A scrape never waits longer than this for the pending-input count."""


async def healthz() -> dict[str, Any]:
    """The process answers."""
    return {"status": "ok"}


async def readyz(probe: NamedDependency[Probe]) -> dict[str, Any]:
    """The store answers, at this binary's schema, and the LISTEN connection is up, all
    within `READY_SECONDS` (503 `not_ready` otherwise)."""
    try:
        async with asyncio.timeout(READY_SECONDS):
            await probe()
    except NodeUnready as error:
        raise NotReady(str(error)) from error
    except TimeoutError as error:
        raise NotReady(f"the store did not answer within {READY_SECONDS:g} s") from error
    except Exception as error:
        raise NotReady(f"the store does not answer: {_cause(error)}") from error
    return {"status": "ready"}


def _cause(error: BaseException) -> str:
    """The name of what failed: the outage under a `StoreUnavailable`, else the error."""
    if isinstance(error, StoreUnavailable) and error.__cause__ is not None:
        error = error.__cause__
    return type(error).__name__


async def metrics_text(metrics: NamedDependency[Metrics],
                       service: NamedDependency[RunnelService]) -> Response[bytes]:
    """Prometheus text exposition."""
    try:
        pending = await asyncio.wait_for(service.dispatcher.pending_total(),
                                         PENDING_READ_SECONDS)
    except Exception:  # the store is away: say "unknown", never serve a stale count
        metrics.inputs_pending.set(math.nan)
    else:
        metrics.inputs_pending.set(pending)
    body, content_type = metrics.render()
    # Litestar appends the charset to text media types itself.
    return Response(body, media_type=content_type.replace("; charset=utf-8", ""))
