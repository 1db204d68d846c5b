"""Use case: expire object intents whose deadline passed, and remove their bodies."""

from __future__ import annotations

from datetime import datetime

from application.ports.clock import Clock
from application.ports.streams import StreamStore
from domain.identifiers import StreamKey


class IntentReaper:
    """An intent still prepared or uploaded after `expires_at` becomes expired, in its
    stream's unit of work, which also queues its body (if any) for deletion.

    Rules: nothing is expired or deleted on a stream under legal hold (the store leaves
    those out, and the hold is checked again under the lock); an intent that moved on
    meanwhile (committed, aborted, expired by a request) is left as it is.
    """

    def __init__(self, store: StreamStore, clock: Clock, region: str) -> None:
        self._region = region
        self._store = store
        self._clock = clock

    async def reap_once(self, limit: int = 100) -> int:
        """Expire up to `limit` due intents; returns how many were expired now."""
        now = self._clock.now()
        expired = 0
        failures: list[Exception] = []
        for key, object_id in await self._store.expired_intents(now, limit, self._region):
            try:
                if await self._expire(key, object_id, now):
                    expired += 1
            except Exception as error:  # the next intent must not wait for this one
                failures.append(error)
        if failures:
            raise ExceptionGroup(f"expiring failed for {len(failures)} intent(s)", failures)
        return expired

    async def _expire(self, key: StreamKey, object_id: str, now: datetime) -> bool:
        async with self._store.lock(key) as session:
            if session.stream.legal_hold:
                return False
            intent = await session.intent(object_id)
            if intent is None or not intent.expire(now):
                return False
            session.stream.release_object(object_id)
            session.save_intent(intent)
            # Any uploaded body goes through the deletion outbox, with this change.
            session.queue_deletions([(intent.region, intent.object_key)], now)
            return True
