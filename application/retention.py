"""Use case: apply a stream's retention pins (never while it is under legal hold)."""

from __future__ import annotations

from application.ports import Clock, ObjectStore, RecordReader, Removed, StreamStore
from domain.identifiers import StreamKey
from domain.retention import age_cutoff, prune_through


class RetentionPruner:
    """Advances `earliest` past records that are too old or too many, deletes their rows
    and any object bodies they referenced. Readers below `earliest` get `cursor_pruned`."""

    def __init__(self, store: StreamStore, reader: RecordReader, objects: ObjectStore,
                 clock: Clock) -> None:
        self._store = store
        self._reader = reader
        self._objects = objects
        self._clock = clock

    async def prune_all(self, page_size: int = 100) -> int:
        """Prune every stream that has a retention pin and is not held; returns how many
        records went. Pages by key, so streams created meanwhile are reached on this
        sweep or the next, and each stream is pruned in its own unit of work."""
        removed = 0
        after: StreamKey | None = None
        while True:
            keys = await self._store.streams_with_retention(after, page_size)
            for key in keys:
                removed += (await self.prune(key)).records
            if len(keys) < page_size:
                return removed
            after = keys[-1]

    async def prune(self, key: StreamKey) -> Removed:
        stream = await self._store.load(key)
        if stream is None or stream.legal_hold:
            return Removed(0)
        pins = stream.definition.retention
        cutoff = age_cutoff(pins, self._clock.now())
        expired = await self._reader.newest_appended_before(key, cutoff) if cutoff else 0
        async with self._store.lock(key) as session:
            if session.stream.legal_hold:
                return Removed(0)
            through = prune_through(pins, session.stream.head, expired)
            if through < session.stream.earliest:
                return Removed(0)
            session.stream.prune(through)
            removed = await session.remove_records_through(through)
        for ref in removed.objects:
            intent = await self._store.load_intent(key, ref.object_id)
            if intent is not None:
                await self._objects.delete(intent.region, intent.object_key)
        return removed
