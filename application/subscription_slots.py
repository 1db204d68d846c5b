"""The per-principal cap on concurrent subscriptions, held across nodes as leases (ADR 0018).

Rules:
- a follow takes its slot before it registers for wakes and gives it back when it closes,
  whatever path it took (backfill of a closed stream included);
- while a node holds slots, one task renews all of them together every keepalive interval
  (at most a third of the lease apart), whatever its follows are doing: a reader whose
  transport stalls keeps its slot until the transport cuts it;
- a node that dies stops renewing, and its slots come back when their leases lapse;
- a release survives the cancellation of the request that triggers it (a client going
  away cancels its request): the port call runs to the end on its own.
"""

from __future__ import annotations

import asyncio
import logging

from application.node import NodeSettings
from application.ports.access import SubscriptionLeases
from application.ports.clock import Clock
from domain.errors import TooManySubscriptions
from domain.principal import Principal

log = logging.getLogger("runnel.subscriptions")


class SubscriptionSlots:
    def __init__(self, leases: SubscriptionLeases, clock: Clock, node: NodeSettings) -> None:
        self._leases = leases
        self._clock = clock
        self._node = node
        self._held: set[str] = set()
        self._renewal: asyncio.Task[None] | None = None
        self._releasing: set[asyncio.Task[None]] = set()

    @property
    def held(self) -> int:
        """Slots this node holds now."""
        return len(self._held)

    @property
    def renew_seconds(self) -> float:
        return min(self._node.keepalive_seconds, self._node.subscription_lease_seconds / 3)

    async def take(self, principal: Principal) -> str:
        """A slot for `principal`, or `TooManySubscriptions` when it holds the cap on all
        nodes together."""
        limit = self._node.max_subscriptions_per_principal
        lease = await self._leases.acquire(principal.tenant, principal.sub, limit,
                                           self._clock.now(),
                                           self._node.subscription_lease_seconds)
        if lease is None:
            raise TooManySubscriptions("too many concurrent subscriptions for this principal",
                                       limit=limit)
        self._held.add(lease)
        if self._renewal is None or self._renewal.done():
            self._renewal = asyncio.create_task(self._renew_while_held())
        return lease

    async def release(self, lease: str) -> None:
        self._held.discard(lease)
        if not self._held and self._renewal is not None:
            self._renewal.cancel()
            self._renewal = None
        task = asyncio.ensure_future(self._give_back(lease))
        self._releasing.add(task)
        task.add_done_callback(self._releasing.discard)
        await asyncio.shield(task)

    async def close(self) -> None:
        """Stop renewing (the node is shutting down) and wait for releases under way."""
        if self._renewal is not None:
            self._renewal.cancel()
            self._renewal = None
        if self._releasing:
            await asyncio.gather(*self._releasing, return_exceptions=True)

    async def _give_back(self, lease: str) -> None:
        try:
            await self._leases.release(lease)
        except Exception:
            # The lease lapses on its own; the slot is only late to come back.
            log.warning("could not release subscription lease %s", lease, exc_info=True)

    async def _renew_while_held(self) -> None:
        while self._held:
            await asyncio.sleep(self.renew_seconds)
            await self.renew_once()

    async def renew_once(self) -> None:
        held = tuple(self._held)
        if not held:
            return
        try:
            renewed = set(await self._leases.renew(held, self._clock.now(),
                                                   self._node.subscription_lease_seconds))
        except Exception:
            log.warning("could not renew %d subscription leases", len(held), exc_info=True)
            return
        lapsed = set(held) - renewed
        if lapsed:
            # Not renewed in time (the storage was out of reach): those slots may be
            # someone else's now, so they are not taken back; the follows go on.
            log.warning("%d subscription leases lapsed before renewal", len(lapsed))
            self._held -= lapsed
