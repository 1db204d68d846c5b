"""The composition root: which adapter plays which port, for the configured backend.

Plain functions (ADR 0040). `open_node(settings, metrics)` opens what the node runs on
(the backend, the object store, the wait service), builds the service on it with
`compose`, starts the background workers when configured, and undoes all of it on exit.
`compose` is the whole object graph: the backend's ports as a node serves them (metered,
reads coalesced), then every use case (`RunnelService.build`). A test changes one port
with `adjust` (`lambda ports: replace(ports, reader=…)`) or one use case with
`NodeHost.swap`, in one typed line.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import AsyncExitStack, asynccontextmanager, contextmanager
from dataclasses import dataclass, replace

from adapters.backend import Backend
from adapters.clock import SystemClock
from application.durable_streams.expiry import FacadeExpiry
from application.durable_streams.facade import DurableStreams
from application.ports.clock import Clock
from application.ports.objects import ObjectStore
from application.ports.outboxes import WorkflowWaitService
from application.service import Ports, RunnelService
from entrypoints.composition.backend import open_backend
from entrypoints.composition.object_stores import open_object_store
from entrypoints.composition.read_coalescing import CoalescingRecordReader
from entrypoints.composition.settings import Settings
from entrypoints.composition.wait_services import open_wait_service
from entrypoints.composition.workers import background_workers
from entrypoints.observability.metering import (
    CountingDeliveryOutbox,
    CountingGapEvidence,
    CountingWakeBus,
    MeteredStreamStore,
    metered_wait_service,
)
from entrypoints.observability.metrics import Metrics

log = logging.getLogger("runnel.container")

Adjust = Callable[[Ports], Ports]
"""A change to the ports before the use cases are built on them (tests)."""


@dataclass(frozen=True)
class Node:
    """A node as its hosts (the HTTP app, the worker host) hold it: the service, and the
    backend it runs on (its probe, revoked-token list and store figures)."""

    service: RunnelService
    backend: Backend
    clock: Clock


def served(backend: Backend, metrics: Metrics) -> Backend:
    """The backend's ports as a node serves them: counted in its metrics, reads coalesced."""
    return replace(backend, store=MeteredStreamStore(backend.store, metrics),
                   reader=CoalescingRecordReader(backend.reader),
                   bus=CountingWakeBus(backend.bus, metrics),
                   gaps=CountingGapEvidence(backend.gaps, metrics),
                   outbox=CountingDeliveryOutbox(backend.outbox, metrics))


def compose(settings: Settings, metrics: Metrics, backend: Backend, objects: ObjectStore,
            wait_service: WorkflowWaitService | None, clock: Clock,
            adjust: Adjust | None = None) -> Node:
    ports = served(backend, metrics).ports(objects, wait_service, clock)
    if adjust is not None:
        ports = adjust(ports)
    return Node(RunnelService.build(ports, settings.node()), backend, clock)


def facade_expiry(node: Node) -> FacadeExpiry | None:
    """The Durable Streams facade's expiry sweep, where the backend keeps its catalog."""
    catalog = node.backend.facade_catalog
    if catalog is None:
        return None
    return FacadeExpiry(DurableStreams(node.service, catalog, node.clock), catalog, node.clock)


@asynccontextmanager
async def open_node(settings: Settings, metrics: Metrics,
                    adjust: Adjust | None = None) -> AsyncIterator[Node]:
    async with AsyncExitStack() as stack:
        backend = await stack.enter_async_context(open_backend(settings))
        objects = await stack.enter_async_context(open_object_store(settings))
        wait_service = metered_wait_service(
            await stack.enter_async_context(open_wait_service(settings, backend)),
            settings.wait_service_kind(), metrics)
        if wait_service is None and settings.workers:
            log.warning("RUNNEL_WAIT_SERVICE is not set: no workflow engine is sent the records "
                        "of input streams; they stay pending until a node with a wait service "
                        "(webhook, dbos or notify) delivers them")
        for collector in backend.collectors:
            metrics.registry.register(collector)
            stack.callback(metrics.registry.unregister, collector)
        node = compose(settings, metrics, backend, objects, wait_service, SystemClock(), adjust)
        stack.push_async_callback(node.service.follower.close)
        if settings.workers:
            leadership = backend.leadership() if backend.leadership is not None else None
            await stack.enter_async_context(background_workers(
                node.service, settings, leadership, metrics, facade_expiry(node)))
        yield node


class NodeHost:
    """What a host of one node holds: its settings and metrics from the start, the node
    while it runs (`running()`; `node` raises at any other time).

    `swap` runs part of a test on a changed node, in one line:
    `with host.swap(lambda node: replace(node, backend=replace(node.backend, probe=down)))`.
    """

    def __init__(self, settings: Settings, adjust: Adjust | None = None) -> None:
        self.settings = settings
        self.metrics = Metrics()
        self._adjust = adjust
        self._node: Node | None = None

    @property
    def node(self) -> Node:
        if self._node is None:
            raise RuntimeError("the node is not running")
        return self._node

    @asynccontextmanager
    async def running(self) -> AsyncIterator[Node]:
        async with open_node(self.settings, self.metrics, self._adjust) as node:
            self._node = node
            try:
                yield node
            finally:
                self._node = None

    def attach(self, node: Node) -> None:
        """Serve `node`, built by the caller (`compose`) on storage it shares with other
        hosts, instead of one `running()` opens."""
        self._node = node

    @contextmanager
    def swap(self, change: Callable[[Node], Node]) -> Iterator[Node]:
        before = self.node
        self._node = change(before)
        try:
            yield self._node
        finally:
            self._node = before
