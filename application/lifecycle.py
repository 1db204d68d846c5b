"""Use cases: close a stream, set or release legal hold, erase a run."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

from application.access import load_stream, run_key, stream_for_writing, stream_key
from application.body_deletion import BodyDeleter, doom_bodies
from application.node import NodeSettings
from application.ports.clock import Clock
from application.ports.outboxes import DeletionOutbox
from application.ports.streams import StreamStore
from domain.errors import InvalidRecord, NotFound
from domain.identifiers import StreamKey
from domain.principal import Principal, Scope
from domain.residency import ensure_may_write_here
from domain.text import is_storable


@dataclass(frozen=True)
class ErasureReport:
    streams: int
    records_deleted: int
    objects_deleted: int
    held_streams: list[str] = field(default_factory=list)
    elsewhere: list[tuple[str, str]] = field(default_factory=list)
    """(stream id, metadata home) of the streams homed in other regions: sealed against
    new records by the run's mark, but erased only by a DELETE at their home."""


HOLD_DRAIN_POLL_SECONDS = 0.05
"""How often placing a hold looks again for deletions of its stream under way."""
HOLD_REASON_MAX_LENGTH = 1000


class StreamLifecycle:
    def __init__(self, store: StreamStore, deletions: DeletionOutbox, deleter: BodyDeleter,
                 clock: Clock, node: NodeSettings) -> None:
        self._store = store
        self._deletions = deletions
        self._deleter = deleter
        self._clock = clock
        self._node = node

    async def close(self, principal: Principal, run_id: str, stream_id: str) -> int:
        """Idempotent; returns the head at close."""
        key = stream_key(principal, run_id, stream_id)
        await stream_for_writing(self._store, principal, key, self._node.region,
                                 self._clock.now())
        async with self._store.lock(key) as session:
            session.stream.close()
            return session.stream.head

    async def set_legal_hold(self, principal: Principal, run_id: str, stream_id: str,
                             held: bool, reason: str | None) -> tuple[bool, str | None]:
        """Only admins place or lift a hold; while held nothing of the stream is deleted.

        Placing one answers once no deletion of the stream is under way: a worker
        that looked at the stream before the hold committed may be deleting a body
        right now, and the hold waits for it (at most one lease), so that from the
        answer on nothing of the stream is deleted."""
        principal.require_scope(Scope.ADMIN)
        if reason is not None and (len(reason) > HOLD_REASON_MAX_LENGTH
                                   or not is_storable(reason)):
            raise InvalidRecord(f"reason must be at most {HOLD_REASON_MAX_LENGTH} characters "
                                "of storable text", field="reason")
        key = stream_key(principal, run_id, stream_id)
        stream = await load_stream(self._store, key, None)
        ensure_may_write_here(stream.definition.placement, self._node.region)
        async with self._store.lock(key) as session:
            session.stream.set_legal_hold(held, reason)
            answer = session.stream.legal_hold, session.stream.hold_reason
        if held:
            await self._deletions_under_way_finished(key)
        return answer

    async def _deletions_under_way_finished(self, key: StreamKey) -> None:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self._node.delivery_lease_seconds  # leases end by then
        while await self._deletions.in_flight(key, self._clock.now()):
            if loop.time() >= deadline:
                return
            await asyncio.sleep(HOLD_DRAIN_POLL_SECONDS)

    async def erase_run(self, principal: Principal, run_id: str) -> ErasureReport:
        """Erase records and object bodies of every stream not under legal hold.

        A run that never had a stream (or another tenant's) is not found. Otherwise
        the run is marked erased first, so no stream can be created in it while (or
        after) it is erased, and no unit of work stores anything more in it on any node.
        The streams homed here are sealed and erased; those homed elsewhere are listed
        in the report, for a DELETE at their home (ADR 0015).
        """
        principal.require_scope(Scope.ADMIN)
        run = run_key(principal, run_id)
        if not await self._store.list_run(run):
            raise NotFound("run not found")
        await self._store.mark_run_erased(run)
        streams = await self._store.list_run(run)
        records = objects = 0
        held: list[str] = []
        elsewhere: list[tuple[str, str]] = []
        for listed in streams:
            home = listed.definition.placement.metadata_home
            if home != self._node.region:
                elsewhere.append((listed.stream_id, home))
                continue
            async with self._store.lock(listed.key) as session:
                head = session.stream.head
                removing = session.stream.erase()
                if session.stream.legal_hold:
                    held.append(listed.stream_id)
                    continue
                if not removing:  # erased before: its records went then, its bodies were queued
                    continue
                records += (await session.remove_records_through(head)).records
                doomed = await doom_bodies(session, self._clock.now())
            # Bodies go after the commit (never a record that points at a deleted body),
            # queued with it: a crash in between leaves them to the deletion worker.
            objects += await self._deleter.delete_now(doomed)
        return ErasureReport(len(streams), records, objects, held, elsewhere)
