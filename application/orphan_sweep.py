"""Use case: remove object bodies that nothing owns any more (the orphan sweep)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import timedelta

from application.node import NodeSettings
from application.ports.clock import Clock
from application.ports.objects import ListedObject, ObjectStore
from application.ports.streams import StreamStore
from domain.object_intent import LIVE_STATES, IntentState, parse_object_key


class OrphanSweeper:
    """Deletes bodies that no live intent and no retained committed record owns.

    Rules:
    - a body younger than `orphan_grace_seconds` is left alone (an upload may be
      between writing the body and recording it);
    - a body is owned by its intent (found from the server-owned key) while the
      intent is prepared or uploaded, or committed with its record still retained
      (sequence at or above the stream's `earliest`);
    - nothing of a stream under legal hold is deleted, owned or not;
    - a key that is not of Runnel's shape is never touched (not ours to judge).
    Catches what a crash left behind: a body uploaded for an intent whose state
    never recorded it, or a deletion lost before the outbox existed.
    """

    def __init__(self, store: StreamStore, objects: ObjectStore, clock: Clock,
                 node: NodeSettings) -> None:
        self._store = store
        self._objects = objects
        self._clock = clock
        self._node = node

    async def sweep(self, regions: Sequence[str]) -> int:
        """One pass over every body of `regions`; returns how many were deleted."""
        cutoff = self._clock.now() - timedelta(seconds=self._node.orphan_grace_seconds)
        deleted = 0
        for region in regions:
            async for listed in self._objects.list_objects(region):
                if listed.modified_at <= cutoff and await self._orphaned(region, listed):
                    await self._objects.delete(region, listed.key)
                    deleted += 1
        return deleted

    async def _orphaned(self, region: str, listed: ListedObject) -> bool:
        named = parse_object_key(listed.key)
        if named is None:
            return False
        key, object_id = named
        stream = await self._store.load(key)
        if stream is not None and (stream.legal_hold or stream.definition.placement
                                   .metadata_home != self._node.region):
            return False  # held, or another region's stream: not this node's to judge
        intent = await self._store.load_intent(key, object_id)
        if intent is None or intent.object_key != listed.key or intent.region != region:
            return True
        state = intent.current_state
        if state in LIVE_STATES:
            return False
        if state is IntentState.COMMITTED:
            retained = (stream is not None and intent.sequence is not None
                        and intent.sequence >= stream.earliest)
            return not retained
        return True
