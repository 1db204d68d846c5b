"""Use cases: create, read and list stream definitions."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from application.access import run_key, stream_for_reading, stream_for_writing, stream_key
from application.listing import DEFAULT_LISTING_LIMIT, check_listing_page
from application.node import NodeSettings
from application.ports.clock import Clock
from application.ports.streams import StreamStore
from domain.definition import build_definition
from domain.errors import DefinitionConflict, NotFound, StreamDeleted
from domain.principal import Principal, Scope, may_read
from domain.residency import (
    ensure_may_serve_metadata_here,
    ensure_may_write_here,
    may_serve_metadata_here,
)
from domain.stream import Stream


@dataclass(frozen=True)
class StreamListing:
    """One page of a run's streams, ascending by `stream_id`.

    `next_cursor` is the last stream id the store read for this page (pass it as
    `cursor` for the next one), None when no stream of the run comes after it. Streams the principal
    may not read, or whose metadata this node may not serve, are left out, so a page
    may hold fewer than `limit` streams (even none) and still have a next one."""

    streams: Sequence[Stream]
    next_cursor: str | None


class StreamDefinitions:
    """Create is idempotent for an identical definition and refuses any other (409), and
    the id of a deleted stream (409 `stream_deleted`)."""

    def __init__(self, store: StreamStore, clock: Clock, node: NodeSettings) -> None:
        self._store = store
        self._clock = clock
        self._node = node

    async def create(self, principal: Principal, run_id: str,
                     raw: dict[str, Any]) -> tuple[Stream, bool]:
        """Returns the stream and whether it was created now (False: identical re-create)."""
        principal.require_scope(Scope.WRITE)
        run = run_key(principal, run_id)
        definition = build_definition(raw, self._node.region, self._node.credit_ceilings)
        ensure_may_write_here(definition.placement, self._node.region)
        key = run.stream(definition.stream_id)
        stream, created = await self._store.create(
            Stream.start(key, definition, self._clock.now()), self._node.max_streams_per_run)
        if stream.deleted or stream.expired(self._clock.now()):
            raise StreamDeleted("a stream with this id was deleted; its id is not reused",
                                stream_id=definition.stream_id)
        if stream.definition != definition:
            raise DefinitionConflict("stream exists with a different definition",
                                     stream_id=definition.stream_id)
        return stream, created

    async def get(self, principal: Principal, run_id: str, stream_id: str) -> Stream:
        key = stream_key(principal, run_id, stream_id)
        return await stream_for_reading(self._store, principal, key, self._node.region,
                                        content=False, now=self._clock.now())

    async def get_for_writing(self, principal: Principal, run_id: str,
                              stream_id: str) -> Stream:
        """The stream, if the principal is among its writers and this node may write it."""
        key = stream_key(principal, run_id, stream_id)
        return await stream_for_writing(self._store, principal, key, self._node.region,
                                        self._clock.now())

    async def list(self, principal: Principal, run_id: str, cursor: str | None = None,
                   limit: int = DEFAULT_LISTING_LIMIT) -> StreamListing:
        """A run exists once it has a stream; an unknown run (or another tenant's) is 404,
        with or without a cursor. Only the streams whose metadata this node may serve
        (home or replica) are listed; a run none of whose streams may be described here
        is 421 (decided on a first page that holds the whole run)."""
        principal.require_scope(Scope.READ)
        check_listing_page(cursor, limit)
        run = run_key(principal, run_id)
        read = await self._store.list_run(run, cursor, limit + 1)  # one more: is there a next?
        streams, more = read[:limit], len(read) > limit
        if not streams and (cursor is None or not await self._store.list_run(run, None, 1)):
            raise NotFound("run not found")
        here = [stream for stream in streams
                if may_serve_metadata_here(stream.definition.placement, self._node.region)]
        if streams and not here and cursor is None and not more:
            ensure_may_serve_metadata_here(streams[0].definition.placement, self._node.region)
        now = self._clock.now()
        readable = [stream for stream in here
                    if not stream.deleted and not stream.expired(now)
                    and may_read(stream.definition.authorization, principal)]
        return StreamListing(readable, streams[-1].stream_id if more else None)
