"""Bounded storage upkeep and the region's maintenance leader."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol

from domain.identifiers import StreamKey


@dataclass(frozen=True)
class UpkeepLimits:
    """What storage upkeep keeps (ADR 0032)."""

    audit_events: int = 1000
    """Events kept per aggregate below its snapshot (the audit tail); older ones go."""
    receipts_before: datetime | None = None
    """Receipts recorded at or before this go (the TTL); None: none for age alone."""
    pruned_receipts_before: datetime | None = None
    """Receipts of records below `earliest` go once recorded at or before this (the
    retry window after a prune); None: they go at once."""
    deliveries_before: datetime | None = None
    """Finished input deliveries created at or before this go; None: none."""
    gaps_before: datetime | None = None
    """Gap evidence recorded at or before this goes; None: none."""


@dataclass(frozen=True)
class UpkeepPass:
    """Rows one upkeep step removed."""

    events: int = 0
    receipts: int = 0
    erased: int = 0
    deliveries: int = 0
    gaps: int = 0

    @property
    def total(self) -> int:
        return self.events + self.receipts + self.erased + self.deliveries + self.gaps

    def __add__(self, other: UpkeepPass) -> UpkeepPass:
        return UpkeepPass(self.events + other.events, self.receipts + other.receipts,
                          self.erased + other.erased, self.deliveries + other.deliveries,
                          self.gaps + other.gaps)


class StorageUpkeep(Protocol):
    """Deletes, in bounded batches, the rows that nothing reads or decides on any more, of
    the streams homed in `home` (ADR 0032).

    - `streams_after(after, limit, home)` pages the streams homed in `home` by key;
    - `tidy(keys, limits, batch)` removes, for those streams, at most `batch` rows of each
      kind: events at or below (snapshot version − `audit_events`) of each stream and of its
      object intents; receipts of records below `earliest` recorded at or before
      `pruned_receipts_before`, and any receipt recorded at or before `receipts_before`;
      and, of a stream that is erased, not under legal hold and without records (one
      sealed under a hold keeps them until erased again), every row but the stream's
      own (records, receipts, events, consumers, intents, deliveries, gap evidence). The
      stream row stays, as the run's erasure mark does: they answer `run_erased`;
    - `purge(limits, batch, home)` removes at most `batch` finished (done) input deliveries
      and at most `batch` gap evidence rows older than their limits.
    Nothing a unit of work reads goes: a stream loads from its snapshot, a receipt goes only
    below `earliest` or past the TTL, a dead-lettered delivery stays. Every call is safe to
    run twice at once and to cut short; a caller repeats a step until it removed fewer than
    `batch` rows of every kind."""

    async def streams_after(self, after: StreamKey | None, limit: int,
                            home: str) -> Sequence[StreamKey]: ...

    async def tidy(self, keys: Sequence[StreamKey], limits: UpkeepLimits,
                   batch: int) -> UpkeepPass: ...

    async def purge(self, limits: UpkeepLimits, batch: int, home: str) -> UpkeepPass: ...


class Leadership(Protocol):
    """Which one process of a region runs the region's sweeps (ADR 0032).

    `lead()` answers whether this process leads now: it takes the lead when nobody holds
    it, keeps it while it holds it, and answers False (and keeps trying on later calls)
    while another process holds it. A leader that dies or loses its database session loses
    the lead without anyone cleaning up; another process takes it on its next call. The
    lead is an economy, not a safety: every sweep it guards is safe to run twice at once."""

    async def lead(self) -> bool: ...

    async def close(self) -> None: ...
