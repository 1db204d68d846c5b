"""Use case: apply a stream's retention pins (never while it is under legal hold)."""

from __future__ import annotations

from application.ports.clock import Clock
from application.ports.records import RecordReader
from application.ports.streams import Removed, StreamStore
from domain.identifiers import StreamKey
from domain.retention import age_cutoff, prune_through


class RetentionPruner:
    """Advances `earliest` past records that are too old or too many and deletes their
    rows; the object bodies they referenced are queued in the deletion outbox in the
    same unit of work (the deletion worker removes them, postponed while held).
    Readers below `earliest` get `cursor_pruned`. A node prunes only the streams homed
    in its region."""

    def __init__(self, store: StreamStore, reader: RecordReader, clock: Clock,
                 region: str) -> None:
        self._region = region
        self._store = store
        self._reader = reader
        self._clock = clock

    async def prune_all(self, page_size: int = 100) -> int:
        """Prune every stream that has a retention pin and is not held; returns how many
        records went. Pages by key, so streams created meanwhile are reached on this
        sweep or the next, and each stream is pruned in its own unit of work. A stream
        that fails does not stop the others: the failures are raised together at the end."""
        removed = 0
        failures: list[Exception] = []
        after: StreamKey | None = None
        while True:
            keys = await self._store.streams_with_retention(after, page_size, self._region)
            for key in keys:
                try:
                    removed += (await self.prune(key)).records
                except Exception as error:  # the next stream must not wait for this one
                    failures.append(error)
            if len(keys) < page_size:
                break
            after = keys[-1]
        if failures:
            raise ExceptionGroup(f"pruning failed on {len(failures)} stream(s)", failures)
        return removed

    async def prune(self, key: StreamKey) -> Removed:
        stream = await self._store.load(key)
        if stream is None or stream.legal_hold:
            return Removed(0)
        pins = stream.definition.retention
        now = self._clock.now()
        cutoff = age_cutoff(pins, now)
        expired = await self._reader.newest_appended_before(key, cutoff) if cutoff else 0
        async with self._store.lock(key) as session:
            if session.stream.legal_hold:
                return Removed(0)
            through = prune_through(pins, session.stream.head, expired)
            if through < session.stream.earliest:
                return Removed(0)
            # Read before the record goes: the floor rises to it (ADR 0047).
            offset = (await session.offset_through(through)
                      if session.stream.offset_needed(through) else None)
            session.stream.prune(through, offset)
            removed = await session.remove_records_through(through)
            bodies = []
            for ref in removed.objects:
                intent = await session.intent(ref.object_id)
                if intent is not None:
                    bodies.append((intent.region, intent.object_key))
            session.queue_deletions(bodies, now)
        return removed
