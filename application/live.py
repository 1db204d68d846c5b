"""Use case: publish best-effort live chunks. Nothing is stored; readers may miss them."""

from __future__ import annotations

import base64
from collections.abc import Sequence
from typing import Any

from application.access import stream_for_writing, stream_key
from application.node import NodeSettings
from application.ports.clock import Clock
from application.ports.streams import StreamStore
from application.ports.waking import LiveDraft, WakeBus
from domain.errors import InvalidRecord
from domain.identifiers import StreamKey
from domain.live_chunk import cap_chunk, outgoing_chunk
from domain.principal import Principal
from domain.records import Draft

MAX_CHUNKS_PER_REQUEST = 1000
SOURCE_MAX_LENGTH = 128


class LivePublishing:
    """Publishing never blocks or fails because of readers: a chunk with no reader is
    dropped, an oversize chunk becomes the truncation marker. The bus gives each chunk
    its `seq` (ADR 0017); a chunk with a `source` and an explicit `index` has a position,
    and re-sending that position gets its first `seq`, so readers de-duplicate by `seq`.
    Live chunks, stored nowhere, still follow the stream's life: none once it is closed,
    none once its run is erased. A publish answers once the bus has put its chunks in the
    order readers see, so every chunk answered before a close reaches each connected
    reader before that close's `end` (ADR 0056)."""

    def __init__(self, store: StreamStore, bus: WakeBus, clock: Clock,
                 node: NodeSettings) -> None:
        self._store = store
        self._bus = bus
        self._clock = clock
        self._node = node

    async def publish(self, principal: Principal, run_id: str, stream_id: str,
                      chunks: Sequence[Any], source: str | None = None,
                      attempt: int | None = None, first_index: int | None = None) -> int:
        """`first_index` is the index of the first chunk (the rest count up from it);
        without it the chunks count from 0 and have no position (each is new)."""
        if not isinstance(chunks, list) or not 0 < len(chunks) <= MAX_CHUNKS_PER_REQUEST:
            raise InvalidRecord(f"chunks must be a list of 1-{MAX_CHUNKS_PER_REQUEST} items")
        if source is not None and (not isinstance(source, str)
                                   or not 0 < len(source) <= SOURCE_MAX_LENGTH):
            raise InvalidRecord(f"source must be a string of 1-{SOURCE_MAX_LENGTH} chars")
        if attempt is not None and (not isinstance(attempt, int) or attempt < 1):
            raise InvalidRecord("attempt must be a positive integer")
        key = stream_key(principal, run_id, stream_id)
        stream = await stream_for_writing(self._store, principal, key, self._node.region,
                                          self._clock.now())
        stream.ensure_open(nothing_more_is="sent")
        redaction = stream.definition.redaction
        # Every chunk is masked or refused before the first is sent: a refusal sends none.
        outgoing = [outgoing_chunk(chunk, redaction.mask, redaction.allow_unmasked_bodies)
                    for chunk in chunks]
        await self._send(key, outgoing, source, attempt, first_index)
        return len(chunks)

    async def publish_drafts(self, key: StreamKey, drafts: Sequence[Draft]) -> int:
        """The records of a best-effort stream, already masked (`draft_from_wire`), as live
        chunks (JSON payloads verbatim, bytes as `{content_type, data}` in base64)."""
        await self._send(key, [cap_chunk(live_body(draft)) for draft in drafts], None, None,
                         None)
        return len(drafts)

    async def _send(self, key: StreamKey, outgoing: Sequence[Any], source: str | None,
                    attempt: int | None, first_index: int | None) -> None:
        positioned = source is not None and first_index is not None
        await self._bus.publish_live([
            LiveDraft(stream=key, data=data, source=source, attempt=attempt,
                      index=(first_index or 0) + offset, positioned=positioned)
            for offset, data in enumerate(outgoing)])


def live_body(draft: Draft) -> Any:
    if draft.has_payload:
        return draft.payload
    data = draft.data or b""
    return {"content_type": draft.content_type, "data": base64.b64encode(data).decode()}
