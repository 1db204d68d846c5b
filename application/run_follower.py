"""Opening run follows: which of a run's streams the caller follows, from which compound
cursor, under one subscription slot (ADR 0073). The merge itself is `RunFollow`
(`run_follow.py`).

Rules:
- the run is refused as a whole only for what a follow of any of its streams would be:
  no `streams:read` (403), a malformed id or a run the token may not see or that holds no
  stream (404), a cursor beyond a covered stream's head (400), no slot left (429);
- a deleted stream (a tombstone, ADR 0075) or one past its expiry (ADR 0076) is absent,
  as it is to a single-stream follow;
- a stream is covered when the caller may read its content (readers pin) and this node
  may serve it (egress regions), and the filter admits it; any other stream is absent,
  from the frames and from every cursor the run follow writes, whatever the request
  named, so its id never shows;
- more covered streams than a compound cursor may name is 400
  `too_many_streams_to_follow`, before a slot is taken.
"""

from __future__ import annotations

from contextlib import AsyncExitStack
from functools import partial

from application.access import run_key
from application.follow_loop import OpenFollow
from application.follower import Follower
from application.node import NodeSettings
from application.ports.clock import Clock
from application.ports.streams import StreamStore
from application.run_follow import RunFollow, RunStreams
from domain.errors import NotFound, TooManyStreamsToFollow
from domain.identifiers import RunKey
from domain.principal import Principal, Scope, may_read
from domain.residency import may_serve_content_here
from domain.run_cursor import MAX_RUN_CURSOR_STREAMS, RunCursor, fits
from domain.run_filter import RunFilter
from domain.stream import Stream

EVERY_STREAM = RunFilter()


class RunFollower:
    def __init__(self, store: StreamStore, follower: Follower, node: NodeSettings,
                 clock: Clock) -> None:
        self._store = store
        self._clock = clock
        self._follower = follower
        self._node = node

    async def open(self, principal: Principal, run_id: str, cursor: RunCursor,
                   wanted: RunFilter = EVERY_STREAM, live: bool = False,
                   expires_in: float | None = None) -> RunFollow:
        """`expires_in`: seconds until the principal's credential expires; the run follow
        ends there with `RunEndFrame("token_expired")`."""
        self._follower.refuse_when_draining()
        principal.require_scope(Scope.READ)
        run = run_key(principal, run_id)
        listing = partial(self._list, principal, run, wanted)
        listed = await listing()
        if not listed.exists:
            raise NotFound("run not found")
        if not fits(stream.stream_id for stream in listed.covered):
            raise TooManyStreamsToFollow(
                f"this run holds more streams to follow than one cursor may name (at most "
                f"{MAX_RUN_CURSOR_STREAMS}): narrow it with streams= or content_class=",
                limit=MAX_RUN_CURSOR_STREAMS)
        slots = self._follower.slots
        lease = await slots.take(principal)
        stack = AsyncExitStack()
        stack.push_async_callback(slots.release, lease)
        opener = partial(self._open_part, live)
        follow = RunFollow(cursor, listing, opener, self._node, stack, expires_in,
                           on_close=self._follower.forget)
        try:
            await follow.start(listed.covered)
        except BaseException:
            await follow.close()
            raise
        self._follower.track(follow, principal)
        return follow

    async def _open_part(self, live: bool, stream: Stream, after: int) -> OpenFollow:
        return await self._follower.open_part(stream, after, live)

    async def _list(self, principal: Principal, run: RunKey, wanted: RunFilter) -> RunStreams:
        streams = await self._store.list_run(run)
        now = self._clock.now()
        covered = [stream for stream in streams if not stream.deleted
                   and not stream.expired(now) and self._covers(principal, wanted, stream)]
        return RunStreams(covered, bool(streams),
                          bool(streams) and all(stream.erased for stream in streams))

    def _covers(self, principal: Principal, wanted: RunFilter, stream: Stream) -> bool:
        definition = stream.definition
        return (may_read(definition.authorization, principal, content=True)
                and may_serve_content_here(definition.placement, self._node.region)
                and wanted.admits(stream.stream_id, definition.content_class))
