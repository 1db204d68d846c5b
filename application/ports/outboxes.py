"""The outboxes: input records to deliver to the workflow, object bodies to delete."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Protocol

from domain.identifiers import StreamKey


@dataclass(frozen=True)
class Delivery:
    """An input record waiting to be published to the workflow, with its claim."""

    stream: StreamKey
    sequence: int
    attempts: int
    claimed_by: str | None = None
    last_error: str | None = None
    dead: bool = False


@dataclass(frozen=True)
class DeliveryRedrive:
    """An operator put dead letters of an input stream back in line: who, when, which."""

    by: str
    at: datetime
    sequences: tuple[int, ...]


@dataclass(frozen=True)
class BodyDeletion:
    """An object body queued for deletion through the deletion outbox, with its claim.

    `stream` is the stream that owned the body (its legal hold postpones the
    deletion); None for a body no stream owns (an orphan)."""

    id: str
    stream: StreamKey | None
    region: str
    object_key: str
    attempts: int = 0
    last_error: str | None = None


class DeliveryOutbox(Protocol):
    """Input-delivery rows, claimed with a lease so a dead worker's rows are taken over.
    A row is pending until it is completed or dead-lettered (claimed and retrying rows
    are still pending).

    Each stream is one line, in sequence order: its head is its lowest pending row, and
    a claim takes rows of a stream only from its head on, so no row is handed out while
    an earlier one of its stream is pending (backing off, or leased to any worker). A
    dead letter leaves the line (it no longer holds back the rows behind it); a re-drive
    puts it back, at its own sequence, so it is the next one delivered there."""

    async def claim(self, worker: str, now: datetime, lease_seconds: float,
                    limit: int, home: str) -> Sequence[Delivery]:
        """Due rows of streams homed in `home` only (a node acts on its region's streams):
        of each stream, its head if it is due and unleased, with the pending rows right
        behind it up to the first that is not. Sorted by stream then sequence; with more
        rows than `limit`, every stream's head goes before any stream's second row."""
        ...

    async def complete(self, key: StreamKey, sequence: int) -> None: ...

    async def retry(self, key: StreamKey, sequence: int, error: str,
                    next_attempt_at: datetime) -> None: ...

    async def release(self, key: StreamKey, sequences: Sequence[int], worker: str) -> None:
        """Hand back unattempted rows `worker` claimed (those behind one that is backing
        off): no attempt counts, and they are claimable again at once."""
        ...

    async def dead_letter(self, key: StreamKey, sequence: int, error: str) -> None: ...

    async def dead_letters(self, key: StreamKey) -> Sequence[Delivery]: ...

    async def redrive(self, key: StreamKey, sequences: Sequence[int], by: str,
                      at: datetime) -> Sequence[int]:
        """Put those of `sequences` that are dead letters of `key` back in line, pending
        and due with no attempt spent, and record one `DeliveryRedrive` of them (none when
        no sequence was a dead letter). Returns them, ascending. Atomic: a sequence is
        re-driven once however many re-drives race."""
        ...

    async def redrives(self, key: StreamKey, limit: int) -> Sequence[DeliveryRedrive]:
        """The latest `limit` re-drives of `key`, newest first."""
        ...

    async def pending_count(self, key: StreamKey | None = None) -> int:
        """Pending rows of `key`, or of every stream when `key` is None."""
        ...


class DeletionOutbox(Protocol):
    """Object bodies to delete, claimed with a lease like input deliveries: several workers
    claim at once without sharing a row, and a dead worker's rows come back when its
    lease expires. A row is claimable when its `not_before` is due and no live lease
    covers it; `now` is the caller's clock."""

    async def claim(self, worker: str, now: datetime, lease_seconds: float,
                    limit: int, home: str) -> Sequence[BodyDeletion]:
        """Due rows of streams homed in `home`, and rows no stream owns whose body is in
        `home`'s region."""
        ...

    async def complete(self, deletion_id: str) -> None:
        """The body is gone: the row is removed."""
        ...

    async def postpone(self, deletion_id: str, next_attempt_at: datetime,
                       error: str | None = None) -> None:
        """Release the claim until `next_attempt_at`; with an `error` the attempt counts
        (a failure), without one it does not (e.g. the stream is under legal hold)."""
        ...

    async def claim_bodies(self, worker: str, bodies: Sequence[tuple[str, str]],
                           now: datetime, lease_seconds: float) -> Sequence[BodyDeletion]:
        """Claim the queued rows of these (region, key) bodies that no live lease covers,
        whatever their `not_before`: a change that just queued them deletes them at once."""
        ...

    async def in_flight(self, stream: StreamKey, now: datetime) -> int:
        """Rows of `stream` claimed under a live lease: deletions that may be under way."""
        ...


@dataclass(frozen=True)
class InputEvent:
    """What the workflow receives for one input record. `event_id` is deterministic and
    derived from the whole stream key, tenant included; `tenant` travels with it, since
    the same run id in two tenants names two runs (ADR 0022)."""

    event_id: str
    tenant: str
    run_id: str
    stream_id: str
    sequence: int
    record: Mapping[str, Any] = field(default_factory=dict)


class WorkflowWaitService(Protocol):
    """The workflow engine's resume authority. Delivery is at-least-once; the
    service deduplicates by `event_id`. Raises on failure so the row is retried.

    `publish` returning is what completes the outbox row, so each adapter states
    what it proves: the webhook, that the receiver answered 2xx (delivered); the
    NOTIFY channel, only that the notification committed (published: Postgres
    hands it to the sessions listening at that moment, and to nobody else)."""

    async def publish(self, event: InputEvent) -> None: ...
