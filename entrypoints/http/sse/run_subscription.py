"""The lifetime of one run subscription (a run follow over Server-Sent Events): frames
are pulled only when the transport took the previous one, and the run follow (its slot,
its streams' registrations) is released exactly once however the request ends, as for a
single stream's subscription (`subscription.py`)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator

from application.ports.errors import StoreUnavailable
from application.run_follow import RunFollow
from entrypoints.http.sse.run_frames import encode_run_frame
from entrypoints.http.sse.subscription import YIELD_EVERY_FRAMES, Release
from entrypoints.observability.metrics import Metrics

log = logging.getLogger("runnel.http")


async def encoded_run_frames(follow: RunFollow, run_id: str,
                             release: Release) -> AsyncIterator[bytes]:
    try:
        sent = 0
        async for frame in follow.frames():
            yield encode_run_frame(frame, run_id)
            sent += 1
            if sent % YIELD_EVERY_FRAMES == 0:
                await asyncio.sleep(0)
    except StoreUnavailable as outage:
        log.warning("ending a subscription to run %s: %s", run_id, outage)
    finally:
        await release()


class RunReaderLease:
    """One open run subscription: counted once in the readers gauge until released."""

    def __init__(self, follow: RunFollow, metrics: Metrics) -> None:
        self._follow = follow
        self._metrics = metrics
        self._released = False
        metrics.readers.inc()

    async def release(self) -> None:
        if self._released:
            return
        self._released = True
        self._metrics.readers.dec()
        await self._follow.close()
