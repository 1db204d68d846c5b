"""Use case: delete object bodies queued in the deletion outbox, never under legal hold."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta

from application.node import NodeSettings
from application.ports.clock import Clock
from application.ports.objects import ObjectStore
from application.ports.outboxes import BodyDeletion, DeletionOutbox
from application.ports.streams import StreamSession, StreamStore
from domain.object_intent import LIVE_STATES, WITH_BODY

HOLD_RECHECK_SECONDS = 60.0
"""How long a deletion waits before looking at its stream's legal hold again."""
MAX_BACKOFF_SECONDS = 300.0
AT_ONCE = "at-once"
"""The claimer name of deletions made by the change that queued them (`delete_now`)."""


async def doom_bodies(session: StreamSession, now: datetime) -> list[tuple[str, str]]:
    """Inside the unit of work that erases or deletes a stream: its unfinished uploads are
    aborted and every stored body is queued for deletion with the change; returns them, for
    `BodyDeleter.delete_now` after the commit (never a record pointing at a deleted body)."""
    intents = await session.intents()
    bodies = [intent for intent in intents if intent.current_state in WITH_BODY]
    for intent in intents:
        if intent.current_state in LIVE_STATES:
            intent.abort()
            session.save_intent(intent)
    doomed = [(intent.region, intent.object_key) for intent in bodies]
    session.queue_deletions(doomed, now)
    return doomed


def deletion_backoff_seconds(attempts: int) -> float:
    return float(min(MAX_BACKOFF_SECONDS, 2 ** max(0, attempts - 1)))


class BodyDeleter:
    """Claims queued deletions and removes their bodies from the object store.

    Rules: a body whose stream is under legal hold is not deleted; its row is
    postponed (without counting an attempt) and looked at again later, until the
    hold is released. A store failure is retried with exponential backoff, never
    dropped. Deleting an absent body is fine, so a row handled twice (a lease that
    expired mid-delete) does no harm.
    """

    def __init__(self, deletions: DeletionOutbox, store: StreamStore, objects: ObjectStore,
                 clock: Clock, node: NodeSettings) -> None:
        self._deletions = deletions
        self._store = store
        self._objects = objects
        self._clock = clock
        self._node = node

    async def delete_once(self, worker: str, limit: int = 100) -> int:
        """Handle due rows; returns how many bodies were deleted."""
        claimed = await self._deletions.claim(worker, self._clock.now(),
                                              self._node.delivery_lease_seconds, limit,
                                              self._node.region)
        deleted = 0
        for deletion in claimed:
            if await self._delete(deletion):
                deleted += 1
        return deleted

    async def delete_now(self, bodies: Sequence[tuple[str, str]]) -> int:
        """Delete bodies a change just queued, at once for its caller, the worker's way:
        claimed first (so a hold being placed waits for them), the hold looked at after
        the claim, the row completed after the delete. Returns how many were deleted;
        the others (held, failed, claimed elsewhere) are left to the worker."""
        claimed = await self._deletions.claim_bodies(AT_ONCE, bodies, self._clock.now(),
                                                     self._node.delivery_lease_seconds)
        deleted = 0
        for deletion in claimed:
            if await self._delete(deletion):
                deleted += 1
        return deleted

    async def _delete(self, deletion: BodyDeletion) -> bool:
        if deletion.stream is not None:
            stream = await self._store.load(deletion.stream)
            if stream is not None and stream.legal_hold:
                later = self._clock.now() + timedelta(seconds=HOLD_RECHECK_SECONDS)
                await self._deletions.postpone(deletion.id, later)
                return False
        try:
            await self._objects.delete(deletion.region, deletion.object_key)
        except Exception as error:  # any store failure is retried, never lost
            attempts = deletion.attempts + 1
            later = self._clock.now() + timedelta(seconds=deletion_backoff_seconds(attempts))
            await self._deletions.postpone(deletion.id, later,
                                           f"{type(error).__name__}: {error}"[:500])
            return False
        await self._deletions.complete(deletion.id)
        return True
