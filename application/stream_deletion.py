"""Use cases: delete one stream (an admin's DELETE), and delete the streams whose
`expires_after_seconds` pin has passed (the expiry sweep)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from application.access import stream_key
from application.body_deletion import BodyDeleter, doom_bodies
from application.node import NodeSettings
from application.ports.clock import Clock
from application.ports.streams import StreamStore
from domain.errors import NotFound
from domain.identifiers import StreamKey
from domain.principal import Principal, Scope, ensure_writer
from domain.residency import ensure_may_write_here


@dataclass(frozen=True)
class StreamDeletionReport:
    records_deleted: int
    objects_deleted: int


class StreamDeletion:
    """Deleting a stream erases its records and object bodies the way run erasure does,
    and keeps its row as a tombstone (docs/adr/0075).

    Rules: the stream's writers (write scope, in the writers pin) and admins delete, at
    the stream's metadata home, as they close it (and as the facade's DELETE, ADR 0070);
    a stream under legal hold is refused (409 `legal_hold`) and keeps everything; the
    records go and the live intents are aborted in the unit of work that marks the stream
    deleted, so an append either committed before (and is erased with it) or finds the
    tombstone (404); the bodies go after that commit, queued with it (a crash in between
    leaves them to the deletion worker); a repeated DELETE of a deleted stream answers
    zero counts; an expired stream is deleted by the sweep alike, unless it is held (then
    it stays until released)."""

    def __init__(self, store: StreamStore, deleter: BodyDeleter, clock: Clock,
                 node: NodeSettings) -> None:
        self._store = store
        self._deleter = deleter
        self._clock = clock
        self._node = node

    async def delete(self, principal: Principal, run_id: str,
                     stream_id: str) -> StreamDeletionReport:
        principal.require_scope(Scope.WRITE)
        key = stream_key(principal, run_id, stream_id)
        stream = await self._store.load(key)
        if stream is None:
            raise NotFound("stream not found")
        ensure_writer(stream.definition.authorization, principal)
        ensure_may_write_here(stream.definition.placement, self._node.region)
        report = await self._delete(key)
        assert report is not None
        return report

    async def expire_once(self, limit: int = 100) -> int:
        """Delete up to `limit` streams of this region whose expiry has passed; returns
        how many were deleted. Each is looked at again under its row lock: a hold placed
        meanwhile keeps it. A stream that fails does not stop the others: the failures are
        raised together at the end."""
        now = self._clock.now()
        deleted = 0
        failures: list[Exception] = []
        for key in await self._store.expired_streams(now, limit, self._node.region):
            try:
                if await self._delete(key, expired_at=now) is not None:
                    deleted += 1
            except Exception as error:  # the next stream must not wait for this one
                failures.append(error)
        if failures:
            raise ExceptionGroup(f"expiry failed on {len(failures)} stream(s)", failures)
        return deleted

    async def _delete(self, key: StreamKey, expired_at: datetime | None = None
                      ) -> StreamDeletionReport | None:
        """None: a sweep found the stream held (or not expired after all) and left it."""
        async with self._store.lock(key) as session:
            stream = session.stream
            if expired_at is not None and (stream.legal_hold or stream.deleted
                                           or not stream.expired(expired_at)):
                return None
            if not stream.delete():
                return StreamDeletionReport(0, 0)
            records = (await session.remove_records_through(session.stream.head)).records
            doomed = await doom_bodies(session, self._clock.now())
        return StreamDeletionReport(records, await self._deleter.delete_now(doomed))
