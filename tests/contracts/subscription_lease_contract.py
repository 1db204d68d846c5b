"""The subscription-lease contract: what every SubscriptionLeases adapter must do, written once.

Subclasses provide a fixture `leases` and a fixture `other_node`, a second adapter on the
same storage (another process's view of it, where the storage can be shared). Every test
uses its own principal, so a shared database need not be emptied between tests.
"""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from uuid import uuid4

from application.ports.access import SubscriptionLeases

NOW = datetime(2026, 1, 1, tzinfo=UTC)
LEASE = 30.0
SHORT = 0.5


def principal() -> tuple[str, str]:
    suffix = uuid4().hex[:12]
    return f"tenant-{suffix}", f"sub-{suffix}"


def later(seconds: float) -> datetime:
    return NOW + timedelta(seconds=seconds)


class SubscriptionLeaseContract:
    async def test_a_principal_gets_at_most_limit_slots(self, leases: SubscriptionLeases) -> None:
        tenant, sub = principal()
        taken = [await leases.acquire(tenant, sub, 2, NOW, LEASE) for _ in range(3)]
        assert taken[0] is not None and taken[1] is not None and taken[0] != taken[1]
        assert taken[2] is None

    async def test_principals_are_counted_apart_and_by_tenant(
            self, leases: SubscriptionLeases) -> None:
        tenant, sub = principal()
        assert await leases.acquire(tenant, sub, 1, NOW, LEASE) is not None
        assert await leases.acquire(tenant, sub + "-other", 1, NOW, LEASE) is not None
        assert await leases.acquire(tenant + "-other", sub, 1, NOW, LEASE) is not None
        assert await leases.acquire(tenant, sub, 1, NOW, LEASE) is None

    async def test_a_release_frees_the_slot_at_once_and_is_idempotent(
            self, leases: SubscriptionLeases) -> None:
        tenant, sub = principal()
        lease = await leases.acquire(tenant, sub, 1, NOW, LEASE)
        assert lease is not None
        await leases.release(lease)
        await leases.release(lease)
        await leases.release(str(uuid4()))
        assert await leases.acquire(tenant, sub, 1, NOW, LEASE) is not None

    async def test_a_holder_that_stops_renewing_loses_its_slot_when_the_lease_lapses(
            self, leases: SubscriptionLeases, other_node: SubscriptionLeases) -> None:
        """A crashed node: nobody releases, nobody renews; the slot comes back by itself."""
        tenant, sub = principal()
        assert await leases.acquire(tenant, sub, 1, NOW, SHORT) is not None
        assert await other_node.acquire(tenant, sub, 1, later(SHORT / 2), LEASE) is None
        assert await other_node.acquire(tenant, sub, 1, later(SHORT), LEASE) is not None
        assert await other_node.acquire(tenant, sub, 1, later(SHORT), LEASE) is None

    async def test_renewing_keeps_the_slot_past_its_first_lease(
            self, leases: SubscriptionLeases, other_node: SubscriptionLeases) -> None:
        tenant, sub = principal()
        lease = await leases.acquire(tenant, sub, 1, NOW, SHORT)
        assert lease is not None
        assert await leases.renew([lease], later(SHORT / 2), SHORT) == [lease]
        assert await other_node.acquire(tenant, sub, 1, later(SHORT), LEASE) is None
        assert await other_node.acquire(tenant, sub, 1, later(SHORT * 1.5), LEASE) is not None

    async def test_a_lapsed_or_released_lease_is_not_revived_by_renewing(
            self, leases: SubscriptionLeases) -> None:
        tenant, sub = principal()
        lapsed = await leases.acquire(tenant, sub, 2, NOW, SHORT)
        kept = await leases.acquire(tenant, sub, 2, NOW, LEASE)
        released = await leases.acquire(tenant + "-b", sub, 1, NOW, LEASE)
        assert lapsed is not None and kept is not None and released is not None
        await leases.release(released)
        renewed = await leases.renew([lapsed, kept, released], later(SHORT), LEASE)
        assert list(renewed) == [kept]
        assert await leases.acquire(tenant, sub, 2, later(SHORT), LEASE) is not None
        assert await leases.acquire(tenant, sub, 2, later(SHORT), LEASE) is None

    async def test_concurrent_acquires_on_two_nodes_never_exceed_the_limit(
            self, leases: SubscriptionLeases, other_node: SubscriptionLeases) -> None:
        tenant, sub = principal()
        limit = 3
        taken = await asyncio.gather(*(node.acquire(tenant, sub, limit, NOW, LEASE)
                                       for node in (leases, other_node) for _ in range(8)))
        assert sum(1 for lease in taken if lease is not None) == limit
