"""The whole service on in-memory adapters, in one process: for simulation and tests."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from adapters.memory.backend import memory_backend
from adapters.memory.clock import FakeClock
from adapters.memory.objects import MemoryObjectStore
from adapters.memory.workflow import MemoryWorkflowWaitService
from application.node import NodeSettings
from application.ports.clock import Clock
from application.service import Ports, RunnelService


@dataclass(frozen=True)
class Simulation:
    """The service and the ports it runs on (the memory backend's, a memory object store,
    a fake clock unless one is given); `workflow` receives what is delivered."""

    service: RunnelService
    ports: Ports
    workflow: MemoryWorkflowWaitService


def simulation(node: NodeSettings | None = None, clock: Clock | None = None,
               regions: tuple[str, ...] = ("local",), delivering: bool = True,
               adjust: Callable[[Ports], Ports] | None = None) -> Simulation:
    """`delivering=False`: no wait service is configured (`workflow` receives nothing).
    `adjust` changes a port before the service is built, in one line:
    `adjust=lambda ports: replace(ports, reader=Slow(ports.reader))`."""
    clock = clock or FakeClock()
    workflow = MemoryWorkflowWaitService()
    ports = memory_backend(clock).ports(MemoryObjectStore(regions, clock),
                                        workflow if delivering else None, clock)
    if adjust is not None:
        ports = adjust(ports)
    return Simulation(RunnelService.build(ports, node or NodeSettings()), ports, workflow)
