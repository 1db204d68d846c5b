"""Use cases of the Durable Streams facade (ADR 0041): a protocol stream IS a Runnel stream.

Rules:
- a protocol path of a tenant names one catalog entry, which names the Runnel run that
  holds the stream (stream id `FACADE_STREAM`); everything stored goes through the Runnel
  use cases (create, append, read, follow, close, erase), so credit, pins, retention and
  workers apply unchanged;
- the entry is written before the Runnel stream is created: a crash in between leaves an
  entry whose stream is created by the next matching PUT (a create is idempotent);
- a DELETE removes the entry, then erases the run; a later PUT of the path gets a new run;
- an expired entry (TTL or Expires-At) is deleted when it is next looked at;
- producer (id, epoch, seq) checks are serialised per (stream, producer) in this process
  and each accepted batch carries idempotency keys derived from the tuple, so a retry after
  a crash between the append and the producer-state write stores nothing twice.
"""

from __future__ import annotations

import asyncio
import hashlib
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import Any, Protocol

from application.appending import AppendResult
from application.following import KeepaliveFrame
from application.ports import Clock, RecordPage
from application.service import RunnelService
from domain.errors import NotFound
from domain.principal import Principal, Scope

FACADE_STREAM = "stream"
FACADE_DEFINITION = {"stream_id": FACADE_STREAM, "content_class": "durable_streams.facade"}
"""Every facade stream's Runnel definition: the node's defaults for everything else."""
RUN_PREFIX = "ds-"


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

    def expired(self, now: datetime) -> bool:
        if self.expires_at is not None and now >= self.expires_at:
            return True
        return (self.ttl_seconds is not None
                and now >= self.touched_at + timedelta(seconds=self.ttl_seconds))


@dataclass(frozen=True)
class ProducerState:
    epoch: int
    last_seq: int


class FacadeCatalog(Protocol):
    """What the protocol knows of a stream beyond the Runnel stream, per tenant and path.

    `insert` keeps an existing entry and returns it (so two racing PUTs agree on one run);
    `remove` removes the entry only if it still names `run_id`."""

    async def find(self, tenant: str, path: str) -> FacadeEntry | None: ...

    async def insert(self, tenant: str, entry: FacadeEntry) -> FacadeEntry: ...

    async def remove(self, tenant: str, path: str, run_id: str) -> bool: ...

    async def touch(self, tenant: str, path: str, at: datetime) -> None: ...

    async def set_closed_by(self, tenant: str, path: str, closed_by: str) -> None: ...

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


class StaleEpoch(Exception):
    def __init__(self, current: int) -> None:
        super().__init__(f"producer epoch is stale; current epoch {current}")
        self.current = current


class SequenceGap(Exception):
    def __init__(self, expected: int, received: int) -> None:
        super().__init__(f"producer sequence gap: expected {expected}, received {received}")
        self.expected = expected
        self.received = received


class NewEpochNotAtZero(Exception):
    pass


class DurableStreams:
    def __init__(self, service: RunnelService, catalog: FacadeCatalog, clock: Clock) -> None:
        self._service = service
        self._catalog = catalog
        self._clock = clock
        self._producer_locks: dict[tuple[str, str, str], asyncio.Lock] = {}

    async def find(self, principal: Principal, path: str) -> FacadeEntry:
        """The live entry of the path, or NotFound (an expired one is deleted here)."""
        principal.require_scope(Scope.READ)
        entry = await self._catalog.find(principal.tenant, path)
        if entry is None:
            raise NotFound("stream not found")
        if entry.expired(self._clock.now()):
            await self._erase(principal, entry)
            raise NotFound("stream not found")
        return entry

    async def lookup(self, principal: Principal, path: str) -> FacadeEntry | None:
        """The live entry whose Runnel stream exists, or None."""
        try:
            entry = await self.find(principal, path)
            await self.status(principal, entry)
        except NotFound:
            return None
        return entry

    async def create(self, principal: Principal, path: str, content_type: str,
                     ttl_seconds: int | None, expires_at: datetime | None) -> tuple[FacadeEntry, bool]:
        """Returns the entry and whether this call made it (False: it existed)."""
        principal.require_scope(Scope.WRITE)
        await self.lookup(principal, path)  # deletes an expired one first
        fresh = FacadeEntry(path, RUN_PREFIX + uuid.uuid4().hex, content_type, ttl_seconds,
                            expires_at, self._clock.now())
        entry = await self._catalog.insert(principal.tenant, fresh)
        await self._service.definitions.create(principal, entry.run_id, dict(FACADE_DEFINITION))
        return entry, entry.run_id == fresh.run_id

    async def touch(self, principal: Principal, entry: FacadeEntry) -> None:
        """A read or a write slides the TTL window."""
        if entry.ttl_seconds is not None:
            await self._catalog.touch(principal.tenant, entry.path, self._clock.now())

    async def status(self, principal: Principal, entry: FacadeEntry) -> RecordPage:
        """Head and closure, without records."""
        return (await self._service.reading.read(principal, entry.run_id, FACADE_STREAM,
                                                 0, 1)).page

    async def read(self, principal: Principal, entry: FacadeEntry, after: int,
                   limit: int) -> RecordPage:
        return (await self._service.reading.read(principal, entry.run_id, FACADE_STREAM,
                                                 after, limit)).page

    async def wait_beyond(self, principal: Principal, entry: FacadeEntry, after: int,
                          timeout: float) -> bool:
        """Wait (at most `timeout` s) until the stream has a record above `after` or is
        closed; True when it has or is. Uses the Runnel follow (its wake registration)."""
        follow = await self._service.follower.open(principal, entry.run_id, FACADE_STREAM,
                                                   after)
        try:
            async with asyncio.timeout(timeout):
                async for frame in follow.frames():
                    if not isinstance(frame, KeepaliveFrame):
                        return True
        except TimeoutError:
            return False
        finally:
            await follow.close()
        return True

    async def append(self, principal: Principal, entry: FacadeEntry,
                     records: Sequence[dict[str, Any]], close: bool,
                     producer: Producer | None) -> AppendResult | None:
        """Append (and close, when asked); None when a producer's batch was a duplicate."""
        if producer is None:
            return await self._append(principal, entry, list(records), close)
        lock = self._producer_locks.setdefault(
            (principal.tenant, entry.run_id, producer.producer_id), asyncio.Lock())
        async with lock:
            state = await self._catalog.producer(principal.tenant, entry.run_id,
                                                 producer.producer_id)
            if state is not None and producer.epoch < state.epoch:
                raise StaleEpoch(state.epoch)
            if state is None or producer.epoch > state.epoch:
                if producer.seq != 0:
                    if state is None:
                        raise SequenceGap(0, producer.seq)
                    raise NewEpochNotAtZero()
            elif producer.seq <= state.last_seq:
                return None
            elif producer.seq > state.last_seq + 1:
                raise SequenceGap(state.last_seq + 1, producer.seq)
            keyed = [{**record, "idempotency_key": key}
                     for record, key in zip(records, producer.keys(len(records)))]
            result = await self._append(principal, entry, keyed, close)
            if close:
                await self._catalog.set_closed_by(principal.tenant, entry.path,
                                                  producer.tuple_text)
            await self._catalog.save_producer(principal.tenant, entry.run_id,
                                              producer.producer_id,
                                              ProducerState(producer.epoch, producer.seq))
            return result

    async def producer_state(self, principal: Principal, entry: FacadeEntry,
                             producer_id: str) -> ProducerState | None:
        return await self._catalog.producer(principal.tenant, entry.run_id, producer_id)

    async def _append(self, principal: Principal, entry: FacadeEntry,
                      records: list[dict[str, Any]], close: bool) -> AppendResult | None:
        result = None
        if records:
            result = await self._service.appender.append(principal, entry.run_id,
                                                         FACADE_STREAM, records)
        if close:
            await self._service.lifecycle.close(principal, entry.run_id, FACADE_STREAM)
        await self.touch(principal, entry)
        return result

    async def close(self, principal: Principal, entry: FacadeEntry) -> int:
        return await self._service.lifecycle.close(principal, entry.run_id, FACADE_STREAM)

    async def delete(self, principal: Principal, path: str) -> None:
        principal.require_scope(Scope.WRITE)
        entry = await self.find(principal, path)
        await self._erase(principal, entry)

    async def _erase(self, principal: Principal, entry: FacadeEntry) -> None:
        if await self._catalog.remove(principal.tenant, entry.path, entry.run_id):
            admin = replace(principal, scopes=principal.scopes | {Scope.ADMIN.value})
            await self._service.lifecycle.erase_run(admin, entry.run_id)
