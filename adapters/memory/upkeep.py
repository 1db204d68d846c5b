"""The in-memory `StorageUpkeep` and `Leadership` (ADR 0032): the same removals as the
Postgres adapter, on the memory store's own rows."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from adapters.memory.outboxes import MemoryDeliveryOutbox
from adapters.memory.store import MemoryStreamStore, _StreamData
from application.ports.upkeep import UpkeepLimits, UpkeepPass
from domain.identifiers import StreamKey


class MemoryStorageUpkeep:
    """Implements `StorageUpkeep` over a `MemoryStreamStore` and its delivery outbox."""

    def __init__(self, store: MemoryStreamStore,
                 outbox: MemoryDeliveryOutbox | None = None) -> None:
        self._store = store
        self._outbox = outbox

    async def streams_after(self, after: StreamKey | None, limit: int,
                            home: str) -> Sequence[StreamKey]:
        keys = [key for key, data in sorted(self._store.stream_data().items())
                if (after is None or key > after) and _home(data) == home]
        return keys[:max(0, limit)]

    async def tidy(self, keys: Sequence[StreamKey], limits: UpkeepLimits,
                   batch: int) -> UpkeepPass:
        removed = UpkeepPass()
        rows = self._store.stream_data()
        for key in keys:
            data = rows.get(key)
            if data is None:
                continue
            stream = data.stream
            if stream.erased and not stream.legal_hold and stream.earliest == stream.head + 1:
                removed += UpkeepPass(erased=self._erase(data, batch))
            else:
                removed += UpkeepPass(events=_compact(data, limits.audit_events, batch),
                                      receipts=_expire(data, limits, batch))
        return removed

    def _erase(self, data: _StreamData, batch: int) -> int:
        key = data.stream.key
        gone = _take(data.events, batch)
        if gone >= batch:
            return gone
        for name in list(data.receipts)[:batch]:
            del data.receipts[name]
            data.receipt_times.pop(name, None)
            gone += 1
        gone += _take(data.records, batch)
        for object_id in list(data.intents)[:batch]:
            del data.intents[object_id]
            gone += 1
        if self._outbox is not None:
            gone += self._outbox.purge(datetime.max, batch, _home(data), stream=key)
        gaps = [i for i, (gap_key, _, _) in enumerate(self._store.gaps) if gap_key == key]
        for index in reversed(gaps[:batch]):
            del self._store.gaps[index]
            del self._store.gap_times[index]
            gone += 1
        return gone

    async def purge(self, limits: UpkeepLimits, batch: int, home: str) -> UpkeepPass:
        deliveries = gaps = 0
        if limits.deliveries_before is not None and self._outbox is not None:
            deliveries = self._outbox.purge(limits.deliveries_before, batch, home)
        if limits.gaps_before is not None:
            rows = self._store.stream_data()
            old = [i for i, ((key, _, _), at) in enumerate(
                       zip(self._store.gaps, self._store.gap_times, strict=True))
                   if at <= limits.gaps_before and key in rows and _home(rows[key]) == home]
            for index in reversed(old[:batch]):
                del self._store.gaps[index]
                del self._store.gap_times[index]
            gaps = min(len(old), batch)
        return UpkeepPass(deliveries=deliveries, gaps=gaps)


class MemoryLeadership:
    """Implements `Leadership`: memory storage lives in one process, which always leads."""

    async def lead(self) -> bool:
        return True

    async def close(self) -> None:
        return None


def _home(data: _StreamData) -> str:
    return data.stream.definition.placement.metadata_home


def _take(rows: list[Any], batch: int) -> int:
    gone = min(len(rows), batch)
    del rows[:gone]
    return gone


def _compact(data: _StreamData, keep: int, batch: int) -> int:
    """Drop up to `batch` events at or below their aggregate's version − `keep`."""
    through = {data.stream.id: data.stream.version - keep}
    through.update({intent.id: intent.version - keep for intent in data.intents.values()})
    kept: list[Any] = []
    gone = 0
    for event in data.events:
        if gone < batch and event.originator_version <= through.get(event.originator_id, 0):
            gone += 1
        else:
            kept.append(event)
    data.events[:] = kept
    return gone


def _expire(data: _StreamData, limits: UpkeepLimits, batch: int) -> int:
    earliest = data.stream.earliest

    def doomed(name: str) -> bool:
        at = data.receipt_times[name]
        if limits.receipts_before is not None and at <= limits.receipts_before:
            return True
        return data.receipts[name] < earliest and (
            limits.pruned_receipts_before is None or at <= limits.pruned_receipts_before)

    gone = sorted((name for name in data.receipts if doomed(name)),
                  key=lambda name: data.receipts[name])[:batch]
    for name in gone:
        del data.receipts[name]
        del data.receipt_times[name]
    return len(gone)
