"""The in-memory backend, wired in this one place: what the node's container takes for
`RUNNEL_STORAGE=memory`, which the simulation and the memory contract tests run on.
Everything lives in this process: nothing survives it, and two processes share nothing."""

from __future__ import annotations

from adapters.backend import Backend
from adapters.memory.bus import MemoryWakeBus
from adapters.memory.durable_streams import MemoryFacadeCatalog
from adapters.memory.outboxes import MemoryDeliveryOutbox
from adapters.memory.revoked_tokens import MemoryRevokedTokens
from adapters.memory.store import MemoryStreamStore
from adapters.memory.subscription_leases import MemorySubscriptionLeases
from adapters.memory.upkeep import MemoryLeadership, MemoryStorageUpkeep
from application.ports.clock import Clock


def memory_backend(clock: Clock | None = None) -> Backend:
    """A fresh, empty backend; `clock` dates what the store records (gaps), the system
    clock by default. Its adapters are the memory ones (`store` is a `MemoryStreamStore`
    and also the reader and the gap evidence, `bus` a `MemoryWakeBus`, …)."""
    bus = MemoryWakeBus()
    outbox = MemoryDeliveryOutbox()
    store = MemoryStreamStore(bus, outbox, clock=clock)
    return Backend(store=store, reader=store, gaps=store, bus=bus, outbox=outbox,
                   deletions=store.deletions, leases=MemorySubscriptionLeases(),
                   revoked=MemoryRevokedTokens(), upkeep=MemoryStorageUpkeep(store, outbox),
                   leadership=MemoryLeadership, facade_catalog=MemoryFacadeCatalog())
