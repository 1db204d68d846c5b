"""The whole service on in-memory adapters, in one process: for simulation and tests."""

from __future__ import annotations

from dataclasses import dataclass

from adapters.memory.bus import MemoryWakeBus
from adapters.memory.clock import FakeClock
from adapters.memory.objects import MemoryObjectStore
from adapters.memory.outboxes import MemoryDeletionOutbox, MemoryDeliveryOutbox
from adapters.memory.store import MemoryStreamStore
from adapters.memory.subscription_leases import MemorySubscriptionLeases
from adapters.memory.upkeep import MemoryStorageUpkeep
from adapters.memory.workflow import MemoryWorkflowWaitService
from application.node import NodeSettings
from application.ports import Clock
from application.service import Ports, RunnelService


@dataclass
class Simulation:
    service: RunnelService
    store: MemoryStreamStore
    bus: MemoryWakeBus
    objects: MemoryObjectStore
    outbox: MemoryDeliveryOutbox
    deletions: MemoryDeletionOutbox
    workflow: MemoryWorkflowWaitService
    clock: Clock
    leases: MemorySubscriptionLeases


def simulation(node: NodeSettings | None = None, clock: Clock | None = None,
               regions: tuple[str, ...] = ("local",), delivering: bool = True) -> Simulation:
    """`delivering=False`: no wait service is configured (`workflow` receives nothing)."""
    node = node or NodeSettings()
    clock = clock or FakeClock()
    bus = MemoryWakeBus()
    outbox = MemoryDeliveryOutbox()
    store = MemoryStreamStore(bus, outbox, clock=clock)
    objects = MemoryObjectStore(regions, clock)
    workflow = MemoryWorkflowWaitService()
    leases = MemorySubscriptionLeases()
    ports = Ports(store=store, reader=store, bus=bus, objects=objects, gaps=store,
                  outbox=outbox, deletions=store.deletions,
                  wait_service=workflow if delivering else None,
                  clock=clock, leases=leases, upkeep=MemoryStorageUpkeep(store, outbox))
    service = RunnelService.build(ports, node)
    return Simulation(service, store, bus, objects, outbox, store.deletions, workflow, clock,
                      leases)
