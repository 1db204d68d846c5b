"""Use cases of the Durable Streams facade (ADR 0041): a protocol stream IS a Runnel stream.

Rules:
- a tenant's protocol path names one catalog entry, which names the Runnel run holding the
  stream (`FACADE_STREAM`); all goes through the Runnel use cases, so credit, pins,
  retention and workers apply unchanged;
- the Runnel stream (and a fork's copied prefix) exists before the entry that names it:
  no path ever names a stream that is not there; a create that loses a race for the path
  erases its own run and answers with the winner's;
- a facade stream keeps the native pins (ADR 0070, `definition.py`): reads need the
  readers pin, appends, re-creates and DELETEs the writers pin;
- a DELETE erases the run and removes the entry (`deletion.py`);
- an expired entry (TTL or Expires-At) is deleted when it is next looked at, or by the
  expiry sweep (`expiry.py`) if it never is;
- `Stream-Seq` and producer checks are serialised per stream (per producer) in this process;
  across processes the stored state only moves forward (`FacadeCatalog`), so a save that
  lost a race never re-admits a fenced epoch or an older `Stream-Seq`. Two processes may
  still admit two batches of one producer at once; their idempotency keys store each once.
"""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Mapping, Sequence
from typing import Any

from application.appending import AppendResult
from application.durable_streams.definition import facade_definition
from application.durable_streams.deletion import (
    RUN_PREFIX,
    delete_entry,
    drop_entry,
    erase_run,
    upkeep,
)
from application.durable_streams.entry_cache import EntryCache
from application.durable_streams.forks import FACADE_STREAM, fork_into
from application.durable_streams.stream_config import StreamConfig, StreamStatus, matching
from application.follow_loop import OpenFollow
from application.keyed_locks import KeyedLocks
from application.ports.clock import Clock
from application.ports.durable_streams import (
    FacadeCatalog,
    FacadeEntry,
    PathInUse,
    Producer,
    StreamGone,
    WriterSeqRegression,
)
from application.ports.records import RecordPage
from application.service import RunnelService
from domain.errors import DomainError, NotFound
from domain.principal import Principal, Scope, ensure_reader
from domain.producer_fencing import ProducerState, admit


class DurableStreams:
    def __init__(self, service: RunnelService, catalog: FacadeCatalog, clock: Clock,
                 templates: Mapping[str, Mapping[str, Any]] | None = None) -> None:
        """`templates`: per tenant (or `*`), the definition fields its streams start from."""
        self._service = service
        self._catalog = catalog
        self._clock = clock
        self._templates = templates or {}
        self._locks = KeyedLocks()
        self._entries = EntryCache()

    async def find(self, principal: Principal, path: str) -> FacadeEntry:
        """The live entry; NotFound (an expired one is deleted here), or StreamGone."""
        principal.require_scope(Scope.READ)
        entry = await self._catalog.find(principal.tenant, path)
        if entry is None:
            raise NotFound("stream not found")
        if entry.deleted:
            raise StreamGone("stream was deleted")
        if entry.expired(self._clock.now()):
            with contextlib.suppress(PathInUse):  # held: expired, but nothing is deleted
                await self._delete(upkeep(principal.tenant), entry)
            raise NotFound("stream not found")
        return entry

    async def find_for_writing(self, principal: Principal,
                               path: str) -> tuple[FacadeEntry, StreamStatus]:
        """The entry and its stream's status, if the principal is among the stream's
        writers (403 if not)."""
        principal.require_scope(Scope.WRITE)
        entry = await self.find(principal, path)
        stream = await self._service.definitions.get_for_writing(principal, entry.run_id,
                                                                 FACADE_STREAM)
        return entry, StreamStatus(stream.head, stream.closed)

    async def find_writable(self, principal: Principal, path: str) -> FacadeEntry:
        """As `find_for_writing`, for a plain append: on the stream's pins alone (they
        never change), with the entry this process last found (`EntryCache`), and no read
        of the stream's state, which the append learns in its own transaction."""
        principal.require_scope(Scope.WRITE)
        principal.require_scope(Scope.READ)
        kept = self._entries.get(principal.tenant, path, self._clock.now())
        if kept is not None:
            try:
                await self._ensure_writer(principal, kept)
                return kept
            except DomainError:  # the pins of a run the path may no longer name
                self._entries.forget(principal.tenant, path)
        entry = await self.find(principal, path)
        await self._ensure_writer(principal, entry)
        self._entries.keep(principal.tenant, entry)
        return entry

    async def _ensure_writer(self, principal: Principal, entry: FacadeEntry) -> None:
        await self._service.appender.ensure_writer(principal, entry.run_id, FACADE_STREAM)

    async def append_records(self, principal: Principal, entry: FacadeEntry,
                             records: list[dict[str, Any]]) -> AppendResult:
        """A plain append to what `find_writable` found. A refusal (closed, erased, ...)
        stored nothing, and the entry is asked for again next time."""
        try:
            result = await self._store(principal, entry, records, close=False)
        except DomainError:
            self._entries.forget(principal.tenant, entry.path)
            raise
        assert result is not None
        return result

    async def find_for_reading(self, principal: Principal, path: str) -> FacadeEntry:
        """The entry, if the principal may read the stream's content (403 if not)."""
        entry = await self.find(principal, path)
        stream = await self._service.definitions.get(principal, entry.run_id, FACADE_STREAM)
        ensure_reader(stream.definition.authorization, principal, content=True)
        return entry

    async def create(self, principal: Principal, path: str,
                     config: StreamConfig) -> tuple[FacadeEntry, bool]:
        """The entry and whether this call made it (False: an identical one existed)."""
        principal.require_scope(Scope.WRITE)
        existing = await self._existing(principal, path)
        if existing is not None:
            try:
                return await self._recreated(principal, existing, config), False
            except NotFound:  # its stream is gone behind the path: the path is free
                self._entries.forget(principal.tenant, path)
                await drop_entry(self._service, self._catalog, upkeep(principal.tenant),
                                 existing)
        run_id = RUN_PREFIX + uuid.uuid4().hex
        definition = facade_definition(principal, self._templates, config.definition)
        await self._service.definitions.create(principal, run_id, definition)
        if config.forked_from is not None:
            source = await self.fork_source(principal, config.forked_from)
            config = await fork_into(self._service, principal, config, source, run_id)
        fresh = FacadeEntry(path, run_id, config.content_type, config.ttl_seconds,
                            config.expires_at, self._clock.now(),
                            forked_from=config.forked_from, fork_offset=config.fork_offset,
                            fork_sub_offset=config.fork_sub_offset)
        entry = await self._catalog.insert(principal.tenant, fresh)
        if entry.run_id != run_id:  # another create of the path won
            await erase_run(self._service, principal, run_id)
            return await self._recreated(principal, entry, config), False
        return entry, True

    async def _recreated(self, principal: Principal, entry: FacadeEntry,
                         config: StreamConfig) -> FacadeEntry:
        """A PUT of a path that exists: writers only; a definition asked must be the one."""
        await self._service.definitions.get_for_writing(principal, entry.run_id, FACADE_STREAM)
        if config.definition is not None:
            asked = facade_definition(principal, self._templates, config.definition)
            await self._service.definitions.create(principal, entry.run_id, asked)
        return matching(entry, config)

    async def fork_source(self, principal: Principal, path: str) -> FacadeEntry:
        """The source a fork names, for its readers: NotFound if none; PathInUse if deleted."""
        try:
            return await self.find_for_reading(principal, path)
        except StreamGone:
            raise PathInUse("the fork source was deleted") from None

    async def _existing(self, principal: Principal, path: str) -> FacadeEntry | None:
        try:
            return await self.find(principal, path)
        except NotFound:
            return None
        except StreamGone:
            raise PathInUse("the path belongs to a deleted stream that still has forks") from None

    async def touch(self, principal: Principal, entry: FacadeEntry) -> None:
        """A read or a write slides the TTL window."""
        if entry.ttl_seconds is not None:
            await self._catalog.touch(principal.tenant, entry.path, self._clock.now())

    async def status(self, principal: Principal, entry: FacadeEntry,
                     writing: bool = False) -> StreamStatus:
        """Head and closure, for a reader (or an admin), or for a writer when `writing`."""
        definitions = self._service.definitions
        get = definitions.get_for_writing if writing else definitions.get
        stream = await get(principal, entry.run_id, FACADE_STREAM)
        return StreamStatus(stream.head, stream.closed)

    async def read(self, principal: Principal, entry: FacadeEntry, after: int,
                   limit: int) -> RecordPage:
        return (await self._service.reading.read(principal, entry.run_id, FACADE_STREAM,
                                                 after, limit)).page

    async def follow(self, principal: Principal, entry: FacadeEntry, after: int,
                     expires_in: float | None = None) -> OpenFollow:
        """The Runnel follow of the stream from `after` (its access checks, a subscription
        slot, a wake registration; ends when the credential is revoked or expires)."""
        return await self._service.follower.open(principal, entry.run_id, FACADE_STREAM,
                                                 after, expires_in=expires_in)

    async def append(self, principal: Principal, entry: FacadeEntry,
                     records: Sequence[dict[str, Any]], close: bool,
                     producer: Producer | None,
                     writer_seq: str | None = None) -> AppendResult | None:
        """Append (and close, when asked); None when a producer's batch was a duplicate
        (checked before `writer_seq`, which must be above the last one accepted)."""
        if producer is None:
            return await self._append(principal, entry, list(records), close, writer_seq)
        async with self._locks.held(("producer", principal.tenant, entry.run_id,
                                     producer.producer_id)):
            state = await self._catalog.producer(principal.tenant, entry.run_id,
                                                 producer.producer_id)
            if not admit(state, producer.epoch, producer.seq):
                if close:  # a retry of an append-and-close whose close did not happen
                    await self._store(principal, entry, [], close=True)
                return None
            # The keys make a retry after a crash between append and state write harmless.
            keys = producer.keys(len(records))
            keyed = [{**record, "idempotency_key": key}
                     for record, key in zip(records, keys, strict=True)]
            result = await self._append(principal, entry, keyed, close, writer_seq)
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
                      records: list[dict[str, Any]], close: bool,
                      writer_seq: str | None) -> AppendResult | None:
        if writer_seq is None:
            return await self._store(principal, entry, records, close)
        async with self._locks.held(("writer", principal.tenant, entry.run_id)):
            fresh = await self._catalog.find(principal.tenant, entry.path)
            last = fresh.writer_seq if fresh is not None else None
            # str order is code point order, which is UTF-8 byte order.
            if last is not None and writer_seq <= last:
                raise WriterSeqRegression(f"Stream-Seq {writer_seq!r} is not above {last!r}")
            result = await self._store(principal, entry, records, close)
            await self._catalog.set_writer_seq(principal.tenant, entry.path, writer_seq)
            return result

    async def _store(self, principal: Principal, entry: FacadeEntry,
                     records: list[dict[str, Any]], close: bool) -> AppendResult | None:
        result = None
        if records:
            result = await self._service.appender.append(principal, entry.run_id,
                                                         FACADE_STREAM, records,
                                                         message_batches=True)
        if close:
            await self._service.lifecycle.close(principal, entry.run_id, FACADE_STREAM)
        await self.touch(principal, entry)
        return result

    async def expire(self, tenant: str, listed: FacadeEntry) -> bool:
        """Delete an entry the expiry sweep listed, as a DELETE would, if its path still
        holds it and it is still expired; False if not (renewed, re-created, deleted
        meanwhile, or under legal hold)."""
        entry = await self._catalog.find(tenant, listed.path)
        if (entry is None or entry.run_id != listed.run_id or entry.deleted
                or not entry.expired(self._clock.now())):
            return False
        try:
            await self._delete(upkeep(tenant), entry)
        except (PathInUse, NotFound):
            return False
        return True

    async def delete(self, principal: Principal, path: str) -> None:
        principal.require_scope(Scope.WRITE)
        await self._delete(principal, await self.find(principal, path))

    async def _delete(self, principal: Principal, entry: FacadeEntry) -> None:
        self._entries.forget(principal.tenant, entry.path)
        await delete_entry(self._service, self._catalog, principal, entry)
