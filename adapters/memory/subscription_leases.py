"""Subscription slots in this process: the `SubscriptionLeases` contract over a dict.

Nothing is shared with another process, so with `storage=memory` the cap holds per node,
which is every node there is (one process is the whole service).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from uuid import uuid4


@dataclass
class _Lease:
    tenant: str
    sub: str
    until: datetime


class MemorySubscriptionLeases:
    """Implements `SubscriptionLeases`; no await between the count and the insert, so
    acquires for one principal cannot interleave."""

    def __init__(self) -> None:
        self._leases: dict[str, _Lease] = {}

    async def acquire(self, tenant: str, sub: str, limit: int, now: datetime,
                      lease_seconds: float) -> str | None:
        mine = [lease_id for lease_id, lease in self._leases.items()
                if (lease.tenant, lease.sub) == (tenant, sub)]
        for lease_id in mine:
            if self._leases[lease_id].until <= now:
                del self._leases[lease_id]
        if sum(1 for lease_id in mine if lease_id in self._leases) >= limit:
            return None
        lease_id = str(uuid4())
        self._leases[lease_id] = _Lease(tenant, sub, now + timedelta(seconds=lease_seconds))
        return lease_id

    async def renew(self, lease_ids: Sequence[str], now: datetime,
                    lease_seconds: float) -> Sequence[str]:
        renewed: list[str] = []
        for lease_id in lease_ids:
            lease = self._leases.get(lease_id)
            if lease is not None and lease.until > now:
                lease.until = now + timedelta(seconds=lease_seconds)
                renewed.append(lease_id)
        return renewed

    async def release(self, lease_id: str) -> None:
        self._leases.pop(lease_id, None)

    def live(self, tenant: str, sub: str, now: datetime) -> int:
        """Leases of the principal live at `now` (tests, diagnostics)."""
        return sum(1 for lease in self._leases.values()
                   if (lease.tenant, lease.sub) == (tenant, sub) and lease.until > now)
