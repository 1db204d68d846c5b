"""Use case: keep storage bounded (event-log compaction, receipt expiry, erased-run and
outbox purges), in bounded batches (ADR 0032)."""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import datetime, timedelta

from application.ports.clock import Clock
from application.ports.upkeep import StorageUpkeep, UpkeepLimits, UpkeepPass
from domain.identifiers import StreamKey

_Step = Callable[[], Awaitable[UpkeepPass]]


@dataclass(frozen=True)
class UpkeepSettings:
    audit_events: int = 1000
    """Events kept per stream (and per object intent) below its snapshot."""
    receipt_ttl_seconds: float | None = 7 * 24 * 3600.0
    """Receipts older than this go, whatever their record; None: never for age alone."""
    receipt_min_seconds: float = 3600.0
    """A receipt of a pruned record still answers its key for this long after it was
    recorded (a retry whose answer was lost)."""
    delivery_keep_seconds: float = 24 * 3600.0
    gap_keep_seconds: float = 7 * 24 * 3600.0
    streams_per_page: int = 100
    batch: int = 1000
    """Rows one statement removes at most."""

    def limits(self, now: datetime) -> UpkeepLimits:
        def before(seconds: float | None) -> datetime | None:
            return None if seconds is None else now - timedelta(seconds=seconds)

        return UpkeepLimits(
            audit_events=self.audit_events,
            receipts_before=before(self.receipt_ttl_seconds),
            pruned_receipts_before=before(self.receipt_min_seconds),
            deliveries_before=before(self.delivery_keep_seconds),
            gaps_before=before(self.gap_keep_seconds),
        )


class StorageMaintenance:
    """One pass walks the streams homed in this node's region, a page at a time, and tidies
    each page until nothing of it is left to remove; then it purges the outboxes.

    Rules: no statement removes more than `batch` rows of one kind (locks and WAL stay
    small, and a pass is cut short cleanly anywhere); streams created meanwhile are reached
    on this pass or the next; the limits are fixed at the start of the pass."""

    def __init__(self, upkeep: StorageUpkeep, clock: Clock, region: str,
                 settings: UpkeepSettings) -> None:
        self._upkeep = upkeep
        self._clock = clock
        self._region = region
        self._settings = settings

    async def run_once(self) -> UpkeepPass:
        settings = self._settings
        limits = settings.limits(self._clock.now())
        removed = UpkeepPass()
        after: StreamKey | None = None
        while True:
            keys = await self._upkeep.streams_after(after, settings.streams_per_page,
                                                    self._region)
            if keys:
                removed += await self._until_done(
                    functools.partial(self._upkeep.tidy, keys, limits, settings.batch))
            if len(keys) < settings.streams_per_page:
                break
            after = keys[-1]
        removed += await self._until_done(
            functools.partial(self._upkeep.purge, limits, settings.batch, self._region))
        return removed

    async def _until_done(self, step: _Step) -> UpkeepPass:
        removed = UpkeepPass()
        while True:
            done = await step()
            removed += done
            if max(done.events, done.receipts, done.erased, done.deliveries,
                   done.gaps) < self._settings.batch:
                return removed
