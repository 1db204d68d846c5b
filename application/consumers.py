"""Use case: acknowledge a consumer's progress. Acks only advance; they feed producer credit."""

from __future__ import annotations

from dataclasses import dataclass

from application.access import DefinitionCache, definition_for_reading, stream_key
from application.ports import StreamSession, StreamStore
from domain.identifiers import validate_id
from domain.principal import Principal


@dataclass(frozen=True)
class AckResult:
    consumer_id: str
    acked: int


class Acknowledger:
    """A consumer is registered by its first ack (or the definition) and belongs to the
    principal that first acked it; only that principal may move it, and only forward."""

    def __init__(self, store: StreamStore) -> None:
        self._store = store
        self._definitions = DefinitionCache(store)

    async def ack(self, principal: Principal, run_id: str, stream_id: str, consumer_id: str,
                  sequence: int) -> AckResult:
        validate_id(consumer_id, "consumer_id")
        key = stream_key(principal, run_id, stream_id)
        await definition_for_reading(self._definitions, principal, key)
        return await self._store.transact(key, lambda session: _ack(
            session, consumer_id, sequence, principal.sub))


async def _ack(session: StreamSession, consumer_id: str, sequence: int,
               owner: str) -> AckResult:
    session.stream.ack(consumer_id, sequence, owner)
    return AckResult(consumer_id, session.stream.acks[consumer_id])
