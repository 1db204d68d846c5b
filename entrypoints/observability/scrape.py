"""One scrape of a node's metrics, whoever serves it (`runnel serve`'s /metrics route,
`runnel worker`'s metrics port).

Rules:
- the figures that need the store (pending inputs, outbox backlogs, consumer lag) are
  read concurrently, each within `STORE_READ_SECONDS`, so a scrape answers within
  about that long whatever the database does;
- a figure the store did not give in time is NaN (unknown), never a stale value;
- everything else is read from memory when the registry renders.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Awaitable

from adapters.backend import Backend
from application.service import RunnelService
from entrypoints.observability.metrics import Metrics

STORE_READ_SECONDS = 2.0
"""A scrape never waits longer than this for the store's figures."""


async def scrape(metrics: Metrics, service: RunnelService, backend: Backend
                 ) -> tuple[bytes, str]:
    """The Prometheus text exposition and its content type."""
    reads: list[Awaitable[None]] = [_pending(metrics, service)]
    if backend.refresh_metrics is not None:
        reads.append(backend.refresh_metrics(STORE_READ_SECONDS))
    await asyncio.gather(*reads)
    return metrics.render()


async def _pending(metrics: Metrics, service: RunnelService) -> None:
    try:
        pending = await asyncio.wait_for(service.dispatcher.pending_total(),
                                         STORE_READ_SECONDS)
    except Exception:  # the store is away: say "unknown", never serve a stale count
        metrics.inputs_pending.set(math.nan)
    else:
        metrics.inputs_pending.set(pending)
