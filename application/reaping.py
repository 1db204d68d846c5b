"""Use case: expire object intents whose deadline passed, and remove their bodies."""

from __future__ import annotations

from application.ports import Clock, ObjectStore, StreamStore


class IntentReaper:
    """An intent still prepared or uploaded after `expires_at` becomes expired, in its
    stream's unit of work, and any body it uploaded is deleted afterwards.

    Rules: nothing is expired or deleted on a stream under legal hold (the store leaves
    those out, and the hold is checked again under the lock); an intent that moved on
    meanwhile (committed, aborted, expired by a request) is left as it is.
    """

    def __init__(self, store: StreamStore, objects: ObjectStore, clock: Clock) -> None:
        self._store = store
        self._objects = objects
        self._clock = clock

    async def reap_once(self, limit: int = 100) -> int:
        """Expire up to `limit` due intents; returns how many were expired now."""
        now = self._clock.now()
        expired = 0
        for key, object_id in await self._store.expired_intents(now, limit):
            async with self._store.lock(key) as session:
                if session.stream.legal_hold:
                    continue
                intent = await session.intent(object_id)
                if intent is None or not intent.expire(now):
                    continue
                session.save_intent(intent)
            # After the commit: a body without a live intent is never served or committed.
            await self._objects.delete(intent.region, intent.object_key)
            expired += 1
        return expired
