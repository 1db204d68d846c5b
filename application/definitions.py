"""Use cases: create, read and list stream definitions."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from application.access import run_key, stream_for_reading, stream_key
from application.node import NodeSettings
from application.ports import Clock, StreamStore
from domain.definition import build_definition
from domain.errors import DefinitionConflict, NotFound
from domain.principal import Principal, Scope, may_read
from domain.residency import (
    ensure_may_serve_metadata_here,
    ensure_may_write_here,
    may_serve_metadata_here,
)
from domain.stream import Stream


class StreamDefinitions:
    """Create is idempotent for an identical definition and refuses any other (409)."""

    def __init__(self, store: StreamStore, clock: Clock, node: NodeSettings) -> None:
        self._store = store
        self._clock = clock
        self._node = node

    async def create(self, principal: Principal, run_id: str,
                     raw: dict[str, Any]) -> tuple[Stream, bool]:
        """Returns the stream and whether it was created now (False: identical re-create)."""
        principal.require_scope(Scope.WRITE)
        run = run_key(principal, run_id)
        definition = build_definition(raw, self._node.region)
        ensure_may_write_here(definition.placement, self._node.region)
        key = run.stream(definition.stream_id)
        stream, created = await self._store.create(
            Stream.start(key, definition, self._clock.now()))
        if stream.definition != definition:
            raise DefinitionConflict("stream exists with a different definition",
                                     stream_id=definition.stream_id)
        return stream, created

    async def get(self, principal: Principal, run_id: str, stream_id: str) -> Stream:
        key = stream_key(principal, run_id, stream_id)
        return await stream_for_reading(self._store, principal, key, self._node.region,
                                        content=False)

    async def list(self, principal: Principal, run_id: str) -> Sequence[Stream]:
        """A run exists once it has a stream; an unknown run (or another tenant's) is 404.
        Only the streams whose metadata this node may serve (home or replica) are listed;
        a run none of whose streams may be described here is 421."""
        principal.require_scope(Scope.READ)
        streams = await self._store.list_run(run_key(principal, run_id))
        if not streams:
            raise NotFound("run not found")
        here = [stream for stream in streams
                if may_serve_metadata_here(stream.definition.placement, self._node.region)]
        if not here:
            ensure_may_serve_metadata_here(streams[0].definition.placement, self._node.region)
        return [stream for stream in here
                if may_read(stream.definition.authorization, principal)]
