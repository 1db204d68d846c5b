"""How a finished group is answered and counted, whichever way it ran.

Rules:
- a committed group is counted, the new states of its streams are kept for the
  next groups (`StreamCache`), and this process's readers are woken; other
  processes hear it through the NOTIFY its statement sent;
- an outage answers every unit of the group with `StoreUnavailable`, and a fenced
  region every unit with `RegionFenced`: neither would fare better in another group.
"""

from __future__ import annotations

import bisect
import logging
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

import asyncpg

from adapters.postgres.codec import AggregateCodec
from adapters.postgres.fences import is_fenced, refusal
from adapters.postgres.group_commit.failures import group_outage
from adapters.postgres.group_commit.stream_cache import StreamCache
from adapters.postgres.group_commit.unit_of_work import GroupStream
from adapters.postgres.group_commit.units import Unit
from adapters.postgres.group_commit.writes import GroupWrites
from application.ports.waking import Wake

log = logging.getLogger("adapters.postgres.group_commit.engine")  # the name operators grep for

OnCommitted = Callable[[Sequence[Wake]], None]

GROUP_SIZE_BUCKETS = (1, 2, 4, 8, 16, 32, 64, 128, 256)
"""Upper bounds of the group-size histogram (`max_group` defaults to 256)."""


@dataclass
class GroupCommitStats:
    """Counters since the committer started (read at scrape time by the node's metrics)."""

    groups: int = 0
    units: int = 0
    failed_groups: int = 0
    largest_group: int = 0
    optimistic_groups: int = 0
    conflicts: int = 0
    """Optimistic groups that found a stream changed by another writer and ran again locked."""
    fenced_groups: int = 0
    """Groups refused because the node's region is fenced (nothing of them was written)."""
    recent_sizes: deque[int] = field(default_factory=lambda: deque(maxlen=1024))
    size_counts: list[int] = field(default_factory=lambda: [0] * (len(GROUP_SIZE_BUCKETS) + 1))
    """Committed groups per size bucket (`GROUP_SIZE_BUCKETS`, then the overflow), not
    cumulative."""
    size_sum: int = 0
    """Units of work of every committed group, accepted or not (the histogram's sum)."""

    def committed(self, size: int, accepted: int) -> None:
        self.groups += 1
        self.units += accepted
        self.largest_group = max(self.largest_group, size)
        self.recent_sizes.append(size)
        self.size_sum += size
        self.size_counts[bisect.bisect_left(GROUP_SIZE_BUCKETS, size)] += 1


class GroupOutcomes:
    """Answers and counts finished groups for one committer."""

    def __init__(self, cache: StreamCache, on_committed: OnCommitted, region: str) -> None:
        self.stats = GroupCommitStats()
        self._cache = cache
        self._on_committed = on_committed
        self._region = region

    def publish_commit(self, group: Sequence[Unit], accepted: int,
                       streams: Iterable[GroupStream], writes: GroupWrites) -> None:
        """`group` committed with `accepted` of its units: count it, keep its streams' new
        states and wake this process's readers (before any unit is answered)."""
        self.stats.committed(len(group), accepted)
        for stream in streams:
            if stream.stream.version != stream.pristine.version:
                # Nobody changes it any more: its units of work have all ended.
                self._cache.remember(stream.stream)
        try:
            self._on_committed(writes.local_wakes)
        except Exception:  # a hint that failed to reach readers delays, never loses
            log.exception("local wake delivery failed")

    def answer_outage(self, group: Sequence[Unit], error: BaseException) -> bool:
        """Answer every unit of `group` with the outage `error` is, if it is one (see
        `group_outage`; their callers retry, with their idempotency keys)."""
        unavailable = group_outage(error)
        if unavailable is None:
            return False
        self.stats.failed_groups += 1
        log.warning("group of %d units of work failed: %s", len(group), unavailable)
        for unit in group:
            unit.fail(unavailable)
        return True

    def answer_fenced(self, group: Sequence[Unit], error: BaseException) -> bool:
        """Answer every unit of `group` with `RegionFenced`, if the fence refused its
        statement (it wrote nothing)."""
        if not is_fenced(error):
            return False
        self.stats.fenced_groups += 1
        log.debug("group of %d units of work refused: region %s is fenced", len(group),
                  self._region)
        for unit in group:
            unit.fail(refusal(self._region, error))
        return True


@dataclass(frozen=True)
class GroupResources:
    """What every group of one committer runs with, optimistic or locked."""

    pool: asyncpg.Pool
    codec: AggregateCodec
    cache: StreamCache
    outcomes: GroupOutcomes
    origin: str
    """This process's origin in the wakes it sends (`encode_wake`)."""
    region: str
    """The node's region, checked against the fence by every write statement."""
