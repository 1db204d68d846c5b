"""Every use case of a node, built once on its ports by the composition root
(`entrypoints.composition.container.NodeContainer`): what entrypoints and tests hold."""

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
from application.objects import Objects
from application.orphan_sweep import OrphanSweeper
from application.reading import RecordReading
from application.redrive import DeadLetterRedrive
from application.retention import RetentionPruner
from application.run_catalog import RunCatalog
from application.run_follower import RunFollower
from application.stream_deletion import StreamDeletion


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
    run_follower: RunFollower
    stream_deletion: StreamDeletion
    maintenance: StorageMaintenance | None = None
    """None when the ports have no `upkeep`."""
