"""Liveness, readiness and metrics, outside the API prefix: the first two need no token,
metrics take the metrics token (`metrics_access.py`, checked by the `scrape` dependency)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

from litestar import Response
from litestar.di import NamedDependency

from application.ports.errors import StoreUnavailable
from entrypoints.composition.backend import NodeUnready
from entrypoints.http.problems import NotReady

Probe = Callable[[], Awaitable[None]]
Scrape = Callable[[], Awaitable[tuple[bytes, str]]]
"""One scrape of the node's metrics (`entrypoints/observability/scrape.py`)."""
READY_SECONDS = 2.0
"""`/readyz` answers within this, whatever the database does."""


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


async def metrics_text(scrape: NamedDependency[Scrape]) -> Response[bytes]:
    """Prometheus text exposition (the store's figures are NaN if it does not answer), for
    `Authorization: Bearer $RUNNEL_METRICS_TOKEN` only (401 otherwise)."""
    body, content_type = await scrape()
    # Litestar appends the charset to text media types itself.
    return Response(body, media_type=content_type.replace("; charset=utf-8", ""))
