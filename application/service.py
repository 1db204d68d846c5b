"""Every use case, built once from a set of ports: what entrypoints and tests hold."""

from __future__ import annotations

from dataclasses import dataclass

from application.acknowledging import Acknowledger
from application.appending import Appender
from application.body_deletion import BodyDeleter
from application.definitions import StreamDefinitions
from application.delivery_inspection import DeliveryInspection
from application.dispatching import InputDispatcher
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
from application.subscription_slots import SubscriptionSlots


@dataclass(frozen=True)
class Ports:
    """The application's bundle: every port the use cases run on, built from a storage
    backend by `adapters.backend.Backend.ports`. A test changes one port with
    `dataclasses.replace`."""

    store: StreamStore
    reader: RecordReader
    bus: WakeBus
    objects: ObjectStore
    gaps: GapEvidence
    outbox: DeliveryOutbox
    deletions: DeletionOutbox
    wait_service: WorkflowWaitService | None
    """None: no wait service is configured and input records stay pending (ADR 0014)."""
    clock: Clock
    leases: SubscriptionLeases
    """Subscription slots, shared by every node on the same storage (ADR 0018)."""
    upkeep: StorageUpkeep | None = None
    """Bounded removal of what nothing needs any more (ADR 0032); None: storage only grows."""


@dataclass(frozen=True)
class RunnelService:
    definitions: StreamDefinitions
    appender: Appender
    reading: RecordReading
    follower: Follower
    acknowledger: Acknowledger
    lifecycle: StreamLifecycle
    objects: Objects
    live: LivePublishing
    retention: RetentionPruner
    dispatcher: InputDispatcher
    intent_reaper: IntentReaper
    body_deleter: BodyDeleter
    orphan_sweeper: OrphanSweeper
    run_catalog: RunCatalog
    delivery_inspection: DeliveryInspection
    redrive: DeadLetterRedrive
    maintenance: StorageMaintenance | None = None
    """None when the ports have no `upkeep`."""

    @classmethod
    def build(cls, ports: Ports, node: NodeSettings) -> RunnelService:
        live = LivePublishing(ports.store, ports.bus, node)
        appender = Appender(ports.store, ports.bus, ports.clock, node, live)
        deleter = BodyDeleter(ports.deletions, ports.store, ports.objects, ports.clock, node)
        return cls(
            definitions=StreamDefinitions(ports.store, ports.clock, node),
            appender=appender,
            reading=RecordReading(ports.store, ports.reader, node),
            follower=Follower(ports.store, ports.reader, ports.bus, ports.gaps, node,
                              SubscriptionSlots(ports.leases, ports.clock, node)),
            acknowledger=Acknowledger(ports.store, node),
            lifecycle=StreamLifecycle(ports.store, ports.deletions, deleter, ports.clock, node),
            objects=Objects(ports.store, ports.objects, appender, deleter, ports.clock, node),
            live=live,
            retention=RetentionPruner(ports.store, ports.reader, ports.clock, node.region),
            dispatcher=InputDispatcher(ports.outbox, ports.reader, ports.wait_service,
                                       ports.clock, node),
            intent_reaper=IntentReaper(ports.store, ports.clock, node.region),
            body_deleter=deleter,
            orphan_sweeper=OrphanSweeper(ports.store, ports.objects, ports.clock, node),
            run_catalog=RunCatalog(ports.store),
            delivery_inspection=DeliveryInspection(ports.store, ports.outbox, node),
            redrive=DeadLetterRedrive(ports.store, ports.outbox, ports.clock, node),
            maintenance=(StorageMaintenance(ports.upkeep, ports.clock, node.region, node.upkeep)
                         if ports.upkeep is not None else None),
        )
