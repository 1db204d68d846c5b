"""In-process wake bus: the store publishes after commit, readers get it at once."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from adapters.fanout import FanoutHub
from application.ports import LiveChunk, Wake, WakeSubscription
from domain.identifiers import StreamKey


class MemoryWakeBus:
    def __init__(self) -> None:
        self.hub = FanoutHub()
        self.published_wakes = 0

    @asynccontextmanager
    async def subscribe(self, key: StreamKey, live: bool = False
                        ) -> AsyncIterator[WakeSubscription]:
        async with self.hub.subscribe(key, live) as subscription:
            yield subscription

    async def publish_live(self, chunk: LiveChunk) -> None:
        self.hub.deliver_live(chunk)

    def publish_wake(self, wake: Wake) -> None:
        """Called by the memory store after a commit only."""
        self.published_wakes += 1
        self.hub.deliver_wake(wake)
