"""Liveness, readiness and metrics: outside the API prefix, no token needed."""

from __future__ import annotations

import asyncio
import math
from collections.abc import Awaitable, Callable
from typing import Any

from litestar import Response
from litestar.di import NamedDependency

from application.service import RunnelService
from entrypoints.http.problems import NotReady
from entrypoints.metrics import Metrics

Probe = Callable[[], Awaitable[None]]
PENDING_READ_SECONDS = 2.0
"""A scrape never waits longer than this for the pending-input count."""


async def healthz() -> dict[str, Any]:
    """The process answers."""
    return {"status": "ok"}


async def readyz(probe: NamedDependency[Probe]) -> dict[str, Any]:
    """The store answers (503 `not_ready` otherwise)."""
    try:
        await probe()
    except Exception as error:
        raise NotReady(f"the store does not answer: {type(error).__name__}") from error
    return {"status": "ready"}


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
