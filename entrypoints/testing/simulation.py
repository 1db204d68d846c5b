"""The whole service in one process, for simulation and tests: the node's own container
(`entrypoints.composition.container.NodeContainer`) with its resources given, not opened.

Rules:
- the backend is the in-memory one unless one is given (the Postgres integration tests
  give theirs), the object store a memory one of `regions`, the wait service a memory
  one (`workflow`) or none, the clock a fake one unless one is given;
- the service is the container's: the same use cases on the same served ports (counted,
  reads coalesced) as a node's; `ports` are the adapters beneath, for a test to look into;
- a test changes one port with `sim.container.<provider>.override(...)` before it first
  takes `sim.service` (built once, on first use).
"""

from __future__ import annotations

from dataclasses import dataclass

from dependency_injector import providers

from adapters.backend import Backend
from adapters.memory.backend import memory_backend
from adapters.memory.clock import FakeClock
from adapters.memory.objects import MemoryObjectStore
from adapters.memory.workflow import MemoryWorkflowWaitService
from application.node import NodeSettings
from application.ports.clock import Clock
from application.ports.objects import ObjectStore
from application.ports.outboxes import DeletionOutbox, DeliveryOutbox
from application.ports.records import RecordReader
from application.ports.streams import StreamStore
from application.ports.waking import GapEvidence, WakeBus
from application.service import RunnelService
from entrypoints.composition.container import NodeContainer
from entrypoints.composition.settings import Settings


@dataclass(frozen=True)
class SimulatedPorts:
    """The adapters the simulated service runs on (the backend's, the object store, the
    clock), as they are: the service reaches them through the node's metering."""

    store: StreamStore
    reader: RecordReader
    gaps: GapEvidence
    bus: WakeBus
    outbox: DeliveryOutbox
    deletions: DeletionOutbox
    objects: ObjectStore
    clock: Clock


@dataclass(frozen=True)
class Simulation:
    container: NodeContainer
    ports: SimulatedPorts
    workflow: MemoryWorkflowWaitService
    """What the dispatcher delivered (nothing when the simulation is not delivering)."""

    @property
    def service(self) -> RunnelService:
        service: RunnelService = self.container.service()
        return service


def simulation(node: NodeSettings | None = None, clock: Clock | None = None,
               regions: tuple[str, ...] = ("local",), delivering: bool = True,
               backend: Backend | None = None) -> Simulation:
    """`delivering=False`: no wait service is configured (`workflow` receives nothing)."""
    clock = clock or FakeClock()
    backend = backend or memory_backend(clock)
    objects = MemoryObjectStore(regions, clock)
    workflow = MemoryWorkflowWaitService()
    container = NodeContainer(settings=Settings(storage="memory", object_store="memory",
                                                    wait_service="memory", workers=False))
    container.clock.override(providers.Object(clock))
    container.node.override(providers.Object(node or NodeSettings()))
    container.backend.override(providers.Object(backend))
    container.object_store.override(providers.Object(objects))
    container.wait_service.override(providers.Object(workflow if delivering else None))
    ports = SimulatedPorts(store=backend.store, reader=backend.reader, gaps=backend.gaps,
                           bus=backend.bus, outbox=backend.outbox, deletions=backend.deletions,
                           objects=objects, clock=clock)
    return Simulation(container, ports, workflow)
