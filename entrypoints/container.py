"""The composition root: which adapter plays which port, for the configured backend.

The object graph is synchronous and built by dependency-injector; the one
asynchronous part, opening the storage backend, happens in `running()`, which
the HTTP lifespan (and any other host) enters once: it opens the backend,
supplies it to the container, yields the service, and undoes all of it on exit.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager

from dependency_injector import containers, providers

from adapters.clock import SystemClock
from application.node import NodeSettings
from application.ports import Clock, ObjectStore, WorkflowWaitService
from application.service import Ports, RunnelService
from entrypoints.backend import Backend, open_backend
from entrypoints.metering import (
    CountingDeliveryOutbox,
    CountingGapEvidence,
    CountingWakeBus,
    MeteredStreamStore,
    metered_wait_service,
)
from entrypoints.metrics import Metrics
from entrypoints.object_stores import open_object_store
from entrypoints.read_coalescing import CoalescingRecordReader
from entrypoints.settings import Settings
from entrypoints.wait_services import open_wait_service
from entrypoints.workers import background_workers

log = logging.getLogger("runnel.container")


def build_ports(backend: Backend, objects: ObjectStore,
                wait_service: WorkflowWaitService | None, clock: Clock,
                metrics: Metrics) -> Ports:
    return Ports(
        store=MeteredStreamStore(backend.store, metrics),
        reader=CoalescingRecordReader(backend.reader),
        bus=CountingWakeBus(backend.bus, metrics),
        objects=objects,
        gaps=CountingGapEvidence(backend.gaps, metrics),
        outbox=CountingDeliveryOutbox(backend.outbox, metrics),
        deletions=backend.deletions,
        wait_service=wait_service,
        clock=clock,
        leases=backend.leases,
        upkeep=backend.upkeep,
    )


def node_settings(settings: Settings) -> NodeSettings:
    return settings.node()


class Container(containers.DeclarativeContainer):
    settings = providers.Dependency(instance_of=Settings)
    backend = providers.Dependency(instance_of=Backend)
    """Supplied by `running()` once the backend is open."""

    metrics = providers.Singleton(Metrics)
    clock = providers.Singleton(SystemClock)
    node = providers.Singleton(node_settings, settings)
    object_store = providers.Dependency(instance_of=object)
    """Supplied by `running()` once the object store is open (see `open_object_store`)."""
    wait_service = providers.Dependency(instance_of=object)
    """Supplied by `running()` once the wait service is open (see `open_wait_service`),
    metered; None when none is configured (input records stay pending)."""
    ports = providers.Singleton(build_ports, backend, object_store, wait_service, clock, metrics)
    service = providers.Singleton(RunnelService.build, ports=ports, node=node)


@asynccontextmanager
async def running(container: Container) -> AsyncIterator[RunnelService]:
    settings: Settings = container.settings()
    async with AsyncExitStack() as stack:
        backend = await stack.enter_async_context(open_backend(settings))
        objects = await stack.enter_async_context(open_object_store(settings))
        wait_service = metered_wait_service(
            await stack.enter_async_context(open_wait_service(settings, backend)),
            settings.wait_service_kind(), container.metrics())
        if wait_service is None and settings.workers:
            log.warning("RUNNEL_WAIT_SERVICE is not set: input records stay pending until a "
                        "node with a wait service delivers them")
        metrics: Metrics = container.metrics()
        for collector in backend.collectors:
            metrics.registry.register(collector)
            stack.callback(metrics.registry.unregister, collector)
        container.backend.override(providers.Object(backend))
        container.object_store.override(providers.Object(objects))
        container.wait_service.override(providers.Object(wait_service))
        stack.callback(_forget_backend, container)
        service: RunnelService = container.service()
        stack.push_async_callback(service.follower.close)
        if settings.workers:
            leadership = backend.leadership() if backend.leadership is not None else None
            await stack.enter_async_context(background_workers(service, settings, leadership,
                                                               metrics))
        yield service


def _forget_backend(container: Container) -> None:
    container.service.reset()
    container.ports.reset()
    container.backend.reset_override()
    container.object_store.reset_override()
    container.wait_service.reset_override()
