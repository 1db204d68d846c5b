"""What the Durable Streams facade keeps beside a Runnel stream (ADR 0041): the catalog
entry of a protocol path, producer state, and the facade's own refusals."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Protocol

from domain.producer_fencing import ProducerState


@dataclass(frozen=True)
class FacadeEntry:
    path: str
    run_id: str
    content_type: str
    ttl_seconds: int | None
    expires_at: datetime | None
    touched_at: datetime
    closed_by: str | None = None
    """`producer:epoch:seq` of the append that closed the stream, if a producer closed it."""
    writer_seq: str | None = None
    """The last `Stream-Seq` accepted (compared byte-wise; scope: the stream)."""
    forked_from: str | None = None
    fork_offset: int | None = None
    fork_sub_offset: int | None = None
    deleted: bool = False
    """Deleted while forks of it remain: 410 to everyone, its path blocked (soft delete)."""

    def expired(self, now: datetime) -> bool:
        if self.expires_at is not None and now >= self.expires_at:
            return True
        return (self.ttl_seconds is not None
                and now >= self.touched_at + timedelta(seconds=self.ttl_seconds))


class FacadeCatalog(Protocol):
    """The facade's entries per tenant and path, and producer state per run.

    `insert` keeps an existing entry and returns it (so two racing PUTs agree on one run);
    `remove` removes the entry (and its producers) only if it still names `run_id`;
    `forks_of` counts the entries forked from a path; `save_producer` and
    `set_writer_seq` never move a state back (a save that lost a race to a later one keeps
    the later); `expired` lists, by (tenant, path)
    after `after`, at most `limit` entries not deleted whose TTL or Expires-At has passed
    at `now`, with their tenants (the expiry sweep's pages)."""

    async def find(self, tenant: str, path: str) -> FacadeEntry | None: ...

    async def insert(self, tenant: str, entry: FacadeEntry) -> FacadeEntry: ...

    async def remove(self, tenant: str, path: str, run_id: str) -> bool: ...

    async def mark_deleted(self, tenant: str, path: str) -> None: ...

    async def forks_of(self, tenant: str, path: str) -> int: ...

    async def expired(self, now: datetime, after: tuple[str, str] | None,
                      limit: int) -> list[tuple[str, FacadeEntry]]: ...

    async def touch(self, tenant: str, path: str, at: datetime) -> None: ...

    async def set_closed_by(self, tenant: str, path: str, closed_by: str) -> None: ...

    async def set_writer_seq(self, tenant: str, path: str, writer_seq: str) -> None: ...

    async def producer(self, tenant: str, run_id: str,
                       producer_id: str) -> ProducerState | None: ...

    async def save_producer(self, tenant: str, run_id: str, producer_id: str,
                            state: ProducerState) -> None: ...


@dataclass(frozen=True)
class Producer:
    producer_id: str
    epoch: int
    seq: int

    @property
    def tuple_text(self) -> str:
        return f"{self.producer_id}:{self.epoch}:{self.seq}"

    def keys(self, count: int) -> list[str]:
        """Idempotency keys of the batch's records (short whatever the producer id)."""
        digest = hashlib.sha256(self.producer_id.encode()).hexdigest()[:32]
        return [f"ds:{digest}:{self.epoch}:{self.seq}:{index}" for index in range(count)]


class WriterSeqRegression(Exception):
    """A `Stream-Seq` not above the last one accepted."""


class StreamGone(Exception):
    """The stream was deleted while forks of it remain (410)."""


class PathInUse(Exception):
    """The path holds a stream with another configuration, a deleted one with forks, or
    one under legal hold that a DELETE may not remove (409)."""


class ForkRefused(Exception):
    """A fork the source cannot give: an offset beyond its tail, a sub-offset past the
    next append (400)."""
