"""Liveness, readiness and metrics: outside the API prefix, no token needed."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from litestar import Response
from litestar.di import NamedDependency

from entrypoints.http.problems import NotReady
from entrypoints.metrics import Metrics

Probe = Callable[[], Awaitable[None]]


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


async def metrics_text(metrics: NamedDependency[Metrics]) -> Response[bytes]:
    """Prometheus text exposition."""
    body, content_type = metrics.render()
    # Litestar appends the charset to text media types itself.
    return Response(body, media_type=content_type.replace("; charset=utf-8", ""))
