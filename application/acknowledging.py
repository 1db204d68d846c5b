"""Use case: acknowledge a consumer's progress. Acks only advance; they feed producer credit."""

from __future__ import annotations

from dataclasses import dataclass

from application.access import DefinitionCache, definition_for_acking, stream_key
from application.node import NodeSettings
from application.ports.clock import Clock
from application.ports.streams import StreamSession, StreamStore
from domain.identifiers import validate_id
from domain.principal import Principal


@dataclass(frozen=True)
class AckResult:
    consumer_id: str
    acked: int


class Acknowledger:
    """Only consumers the definition declares exist; an ack never registers one. A
    declaration may pin the principals allowed to ack it; otherwise any of the stream's
    readers may. Acks only move forward."""

    def __init__(self, store: StreamStore, clock: Clock, node: NodeSettings) -> None:
        self._clock = clock
        self._node = node
        self._store = store
        self._definitions = DefinitionCache(store)

    async def ack(self, principal: Principal, run_id: str, stream_id: str, consumer_id: str,
                  sequence: int) -> AckResult:
        validate_id(consumer_id, "consumer_id")
        key = stream_key(principal, run_id, stream_id)
        definition = await definition_for_acking(self._definitions, principal, key,
                                                 self._node.region, self._clock.now())
        definition.consumer_principals(consumer_id)  # an undeclared id: refused before any work
        return await self._store.transact(key, lambda session: _ack(
            session, consumer_id, sequence, principal.sub))


async def _ack(session: StreamSession, consumer_id: str, sequence: int,
               principal: str) -> AckResult:
    stream = session.stream
    # The acked record's byte offset, when the floor may rise to it (ADR 0047).
    offset = await session.offset_through(sequence) if stream.offset_needed(sequence) else None
    stream.ack(consumer_id, sequence, principal, offset)
    return AckResult(consumer_id, session.stream.acks[consumer_id])
