"""What a storage adapter hands the contract tests: every port it implements, plus a way to
read back the gap evidence it recorded (each adapter stores it its own way)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from application.ports import (
    DeletionOutbox,
    DeliveryOutbox,
    GapEvidence,
    RecordReader,
    StreamStore,
    WakeBus,
)
from domain.identifiers import StreamKey


@dataclass
class StorageHarness:
    store: StreamStore
    reader: RecordReader
    gaps: GapEvidence
    bus: WakeBus
    outbox: DeliveryOutbox
    gap_reader: Callable[[StreamKey], Awaitable[list[tuple[int, int]]]]
    deletions: DeletionOutbox

    async def recorded_gaps(self, key: StreamKey) -> list[tuple[int, int]]:
        """(expected, received) pairs recorded for `key`, oldest first."""
        return await self.gap_reader(key)
