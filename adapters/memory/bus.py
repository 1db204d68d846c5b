"""In-process wake bus: the store publishes after commit, readers get it at once.

Live chunks are numbered here, as they are handed to the readers (ADR 0017): one
process is the only publisher, so the order of numbering is the order of delivery.
The numbers live as long as the process, as everything of the memory adapters does.
Chunks and wakes are handed to the subscriptions as they are published and committed,
so a closing wake comes after every chunk published before it (ADR 0056).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager

from adapters.fanout import FanoutHub
from application.ports.waking import LiveDraft, Wake, WakeSubscription
from domain.identifiers import StreamKey
from domain.live_seq import LiveSeq


class MemoryWakeBus:
    def __init__(self) -> None:
        self.hub = FanoutHub()
        self.published_wakes = 0
        self._live_seq: dict[StreamKey, LiveSeq] = {}

    @asynccontextmanager
    async def subscribe(self, key: StreamKey, live: bool = False
                        ) -> AsyncIterator[WakeSubscription]:
        async with self.hub.subscribe(key, live) as subscription:
            yield subscription

    async def publish_live(self, drafts: Sequence[LiveDraft]) -> None:
        for draft in drafts:
            seq, self._live_seq[draft.stream] = self._live_seq.get(
                draft.stream, LiveSeq()).assign(draft.position)
            self.hub.deliver_live(draft.numbered(seq))

    def publish_wake(self, wake: Wake) -> None:
        """Called by the memory store after a commit only."""
        self.published_wakes += 1
        self.hub.deliver_wake(wake)
