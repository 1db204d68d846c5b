"""The composition root: one dependency-injector container of typed providers (ADR 0063).

Rules:
- `NodeContainer` is the one wiring of a node: the server, the worker host, the SDK's
  double, the simulation and the contract tests all take theirs from it, and change
  one adapter with `container.<provider>.override(...)` before the node is built;
- every asynchronous resource (the backend, the object store, the wait service) is a
  `providers.Resource`: `open_node` has the container open them all
  (`init_resources`) and close them all (`shutdown_resources`), even when opening
  failed half way; a declared resource closes before the resources it is given (the
  wait service before the backend); an overriding `Resource` is opened and closed the
  same way, an overriding `Object` is the caller's to close;
- the backend is chosen by `RUNNEL_STORAGE` (a `Selector`: the memory one is a plain
  value, the Postgres one is opened); the object store and the wait service by their
  openers (`object_stores.py`, `wait_services.py`), which hold the rules of each kind;
- the ports are the backend's as a node serves them (counted in its metrics, reads
  coalesced); every use case is a `Singleton` on them, and the service is built from
  the use cases: each provider's annotation is the type callers get from it;
- a container runs one node, once: its singletons outlive `open_node`.
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import AsyncExitStack, asynccontextmanager, contextmanager
from dataclasses import dataclass
from typing import TypeVar

from dependency_injector import containers, providers

from adapters.backend import Backend
from adapters.clock import SystemClock
from adapters.memory.backend import memory_backend
from application.acknowledging import Acknowledger
from application.appending import Appender
from application.body_deletion import BodyDeleter
from application.definitions import StreamDefinitions
from application.delivery_inspection import DeliveryInspection
from application.dispatching import InputDispatcher
from application.durable_streams.expiry import FacadeExpiry
from application.durable_streams.facade import DurableStreams
from application.follower import Follower
from application.intent_reaping import IntentReaper
from application.lifecycle import StreamLifecycle
from application.live import LivePublishing
from application.maintenance import StorageMaintenance
from application.node import NodeSettings
from application.objects import Objects
from application.orphan_sweep import OrphanSweeper
from application.ports.access import SubscriptionLeases
from application.ports.clock import Clock
from application.ports.objects import ObjectStore
from application.ports.outboxes import DeletionOutbox, DeliveryOutbox, WorkflowWaitService
from application.ports.records import RecordReader
from application.ports.streams import StreamStore
from application.ports.upkeep import StorageUpkeep
from application.ports.waking import GapEvidence, WakeBus
from application.reading import RecordReading
from application.redrive import DeadLetterRedrive
from application.retention import RetentionPruner
from application.run_catalog import RunCatalog
from application.run_follower import RunFollower
from application.service import RunnelService
from application.stream_deletion import StreamDeletion
from application.subscription_slots import SubscriptionSlots
from entrypoints.composition.backend import open_postgres_backend
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

T = TypeVar("T")


def storage_maintenance(upkeep: StorageUpkeep | None, clock: Clock,
                        node: NodeSettings) -> StorageMaintenance | None:
    """None where the backend has no upkeep (its storage only grows)."""
    if upkeep is None:
        return None
    return StorageMaintenance(upkeep, clock, node.region, node.upkeep)


class NodeContainer(containers.DeclarativeContainer):
    """A node's object graph: `NodeContainer(settings=…)`, then `open_node(container)`."""

    settings: providers.Dependency[Settings] = providers.Dependency(instance_of=Settings)
    metrics = providers.Singleton(Metrics)
    clock = providers.Singleton[Clock](SystemClock)
    node = providers.Singleton[NodeSettings](Settings.node, settings)

    backend = providers.Resource[Backend](providers.Selector(
        settings.provided.storage,
        memory=providers.Callable(memory_backend, clock),
        postgres=providers.Callable(open_postgres_backend, settings)))
    object_store = providers.Resource[ObjectStore](open_object_store, settings)
    wait_service = providers.Resource[WorkflowWaitService | None](open_wait_service, settings,
                                                                  backend)
    """None: no wait service is configured and input records stay pending (ADR 0014)."""

    store = providers.Singleton[StreamStore](MeteredStreamStore, backend.provided.store,
                                             metrics)
    reader = providers.Singleton[RecordReader](CoalescingRecordReader, backend.provided.reader)
    bus = providers.Singleton[WakeBus](CountingWakeBus, backend.provided.bus, metrics)
    gaps = providers.Singleton[GapEvidence](CountingGapEvidence, backend.provided.gaps, metrics)
    outbox = providers.Singleton[DeliveryOutbox](CountingDeliveryOutbox, backend.provided.outbox,
                                                 metrics)
    deletions: providers.Provider[DeletionOutbox] = backend.provided.deletions
    leases: providers.Provider[SubscriptionLeases] = backend.provided.leases
    """Subscription slots, shared by every node on the same storage (ADR 0018)."""
    upkeep: providers.Provider[StorageUpkeep | None] = backend.provided.upkeep
    published = providers.Singleton[WorkflowWaitService | None](
        metered_wait_service, wait_service, settings.provided.wait_service_kind.call(), metrics)
    """The wait service as the dispatcher uses it: each delivery counted (ADR 0014)."""

    live = providers.Singleton(LivePublishing, store, bus, clock, node)
    appender = providers.Singleton(Appender, store, bus, clock, node, live)
    body_deleter = providers.Singleton(BodyDeleter, deletions, store, object_store, clock, node)
    definitions = providers.Singleton(StreamDefinitions, store, clock, node)
    slots = providers.Singleton(SubscriptionSlots, leases, clock, node)
    follower = providers.Singleton(Follower, store, reader, bus, gaps, node, slots, clock)
    run_follower = providers.Singleton(RunFollower, store, follower, node, clock)
    reading = providers.Singleton(RecordReading, store, reader, clock, node, follower)
    acknowledger = providers.Singleton(Acknowledger, store, clock, node)
    lifecycle = providers.Singleton(StreamLifecycle, store, deletions, body_deleter, clock, node)
    objects = providers.Singleton(Objects, store, object_store, appender, body_deleter, clock,
                                  node)
    retention = providers.Singleton(RetentionPruner, store, reader, clock, node.provided.region)
    dispatcher = providers.Singleton(InputDispatcher, outbox, reader, published, clock, node)
    intent_reaper = providers.Singleton(IntentReaper, store, clock, node.provided.region)
    orphan_sweeper = providers.Singleton(OrphanSweeper, store, object_store, clock, node)
    run_catalog = providers.Singleton(RunCatalog, store, clock)
    delivery_inspection = providers.Singleton(DeliveryInspection, store, outbox, clock, node)
    redrive = providers.Singleton(DeadLetterRedrive, store, outbox, clock, node)
    stream_deletion = providers.Singleton(StreamDeletion, store, body_deleter, clock, node)
    maintenance = providers.Singleton(storage_maintenance, upkeep, clock, node)

    service = providers.Singleton(
        RunnelService, definitions=definitions, appender=appender, reading=reading,
        follower=follower, acknowledger=acknowledger, lifecycle=lifecycle, objects=objects,
        live=live, retention=retention, dispatcher=dispatcher, intent_reaper=intent_reaper,
        body_deleter=body_deleter, orphan_sweeper=orphan_sweeper, run_catalog=run_catalog,
        delivery_inspection=delivery_inspection, redrive=redrive, run_follower=run_follower,
        maintenance=maintenance, stream_deletion=stream_deletion)


async def provided(provider: providers.Provider[T]) -> T:
    """What `provider` gives, once what it depends on is open: awaited where one of its
    resources was opened asynchronously, as is where every one was given."""
    value = provider()
    if inspect.isawaitable(value):
        awaited: T = await value
        return awaited
    return value


@dataclass(frozen=True)
class Node:
    """A node as its hosts (the HTTP app, the worker host) hold it: the service, and the
    backend it runs on (its probe, revoked-token list and store figures)."""

    service: RunnelService
    backend: Backend
    clock: Clock


def facade_expiry(node: Node) -> FacadeExpiry | None:
    """The Durable Streams facade's expiry sweep, where the backend keeps its catalog."""
    catalog = node.backend.facade_catalog
    if catalog is None:
        return None
    return FacadeExpiry(DurableStreams(node.service, catalog, node.clock), catalog, node.clock)


@asynccontextmanager
async def open_node(container: NodeContainer) -> AsyncIterator[Node]:
    """The container's resources opened, its service built on them, the background workers
    started when configured; on exit, the workers stopped, the open follows ended, and
    the resources closed."""
    settings, metrics = container.settings(), container.metrics()
    async with AsyncExitStack() as stack:
        stack.push_async_callback(_shut_down, container)
        await _initialized(container)
        node = Node(await provided(container.service), await provided(container.backend),
                    await provided(container.clock))
        if await provided(container.wait_service) is None and settings.workers:
            log.warning("RUNNEL_WAIT_SERVICE is not set: no workflow engine is sent the records "
                        "of input streams; they stay pending until a node with a wait service "
                        "(webhook, dbos or notify) delivers them")
        for collector in node.backend.collectors:
            metrics.registry.register(collector)
            stack.callback(metrics.registry.unregister, collector)
        stack.push_async_callback(node.service.follower.close)
        if settings.workers:
            leadership = node.backend.leadership
            await stack.enter_async_context(background_workers(
                node.service, settings, leadership() if leadership is not None else None,
                metrics, facade_expiry(node)))
        yield node


async def _initialized(container: NodeContainer) -> None:
    opening = container.init_resources()
    if opening is not None:
        await opening


async def _shut_down(container: NodeContainer) -> None:
    closing = container.shutdown_resources()
    if closing is not None:
        await closing


class NodeHost:
    """What a host of one node holds: its container and metrics from the start, the node
    while it runs (`running()`; `node` raises at any other time).

    A test changes an adapter with `host.container.<provider>.override(...)` before the
    node runs, and part of a running node with `swap`, in one line:
    `with host.swap(lambda node: replace(node, backend=replace(node.backend, probe=down)))`.
    """

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.container = NodeContainer(settings=settings)
        self.metrics: Metrics = self.container.metrics()
        self._node: Node | None = None

    @property
    def node(self) -> Node:
        if self._node is None:
            raise RuntimeError("the node is not running")
        return self._node

    @asynccontextmanager
    async def running(self) -> AsyncIterator[Node]:
        async with open_node(self.container) as node:
            self._node = node
            try:
                yield node
            finally:
                self._node = None

    def attach(self, node: Node) -> None:
        """Serve `node`, built by the caller on storage it shares with other hosts, instead
        of one `running()` opens."""
        self._node = node

    @contextmanager
    def swap(self, change: Callable[[Node], Node]) -> Iterator[Node]:
        before = self.node
        self._node = change(before)
        try:
            yield self._node
        finally:
            self._node = before
