"""The adapters' bundle: every port one storage backend plays for a process.

One type for every backend: `adapters.memory.backend.memory_backend()` wires the
in-memory one, `adapters.postgres.open_postgres()` opens the Postgres one (a
`PostgresAdapters`: this bundle with its concrete adapters and pool). The composition
root's container (`entrypoints.composition.container`) takes one or the other by the
node's settings and derives the ports the use cases run on from it.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from prometheus_client.registry import Collector

from application.ports.access import RevokedTokens, SubscriptionLeases
from application.ports.durable_streams import FacadeCatalog
from application.ports.outboxes import DeletionOutbox, DeliveryOutbox, WorkflowWaitService
from application.ports.records import RecordReader
from application.ports.streams import StreamStore
from application.ports.upkeep import Leadership, StorageUpkeep
from application.ports.waking import GapEvidence, WakeBus


async def always_ready() -> None:
    return None


@dataclass(frozen=True, kw_only=True)
class Backend:
    store: StreamStore
    reader: RecordReader
    gaps: GapEvidence
    bus: WakeBus
    outbox: DeliveryOutbox
    deletions: DeletionOutbox
    leases: SubscriptionLeases
    """Subscription slots: shared by every node on the same storage (ADR 0018)."""
    revoked: RevokedTokens
    """The revoked-token list: shared by every node on the same storage (ADR 0024)."""
    upkeep: StorageUpkeep | None = None
    """Bounded removal of what nothing needs any more (ADR 0032)."""
    leadership: Callable[[], Leadership] | None = None
    """A new contender for the region's upkeep lead (one per process hosting workers)."""
    probe: Callable[[], Awaitable[None]] = always_ready
    """Raises when the store cannot serve (what `/readyz` asks)."""
    notify: Callable[[str], WorkflowWaitService] | None = None
    """A NOTIFY wait service on the given channel (Postgres backends only)."""
    collectors: tuple[Collector, ...] = ()
    """What the backend adds to the node's /metrics, read at scrape time (Postgres: the
    committer, LISTEN, the pool and the store's figures; memory: nothing)."""
    refresh_metrics: Callable[[float], Awaitable[None]] | None = None
    """Reads, within the given seconds, the figures a scrape needs from the store."""
    facade_catalog: FacadeCatalog | None = None
    """The Durable Streams facade's catalog (ADR 0041); None: the facade is not served."""
