"""A run follow: the streams of a run the caller may read, merged into one subscription
(ADR 0073). Opened by `RunFollower` (`run_follower.py`).

Rules:
- one `OpenFollow` per covered stream (`Follower.open_part`), each registered for wakes
  before it reads its history; the run follow holds the one subscription slot, and is
  what revocation, drain and the credential's expiry end;
- a stream's frames come in its sequence order; streams interleave as their frames come.
  A stream runs at most `FRAMES_AHEAD` frames ahead of what was handed on, so a run
  follow holds at most that many frames per stream (and, as a follow does, one page of
  records per stream), whatever the reader's pace;
- the compound cursor moves with each record frame handed on, and each record frame
  carries it: resuming from the last one received loses and repeats nothing, per stream;
- the run's streams are listed again at every keepalive tick and whenever one of its
  streams ends: a stream created since, that the caller may read and the filter admits,
  joins from its start, at most one keepalive interval after its creation;
- a stream delivered whole after its close ends with an end frame of its own, one whose
  cursor was pruned with a resync frame of its own; the other streams go on, and an
  ended stream does not join again on this connection;
- the run follow ends (`RunEndFrame`) once every stream of the run is erased and every
  covered one has ended ("erased"); when the run holds more streams to cover than a
  compound cursor may name ("too_many_streams"); when its credential expires or is
  revoked, or the node drains (as a follow does). Nothing comes after it.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, Sequence
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from typing import Literal, NamedTuple, cast

from application.follow_frames import (
    EndFrame,
    Frame,
    KeepaliveFrame,
    LiveFrame,
    RecordFrame,
    ResyncFrame,
)
from application.follow_loop import OpenFollow
from application.node import NodeSettings
from domain.errors import CursorPruned, NotFound
from domain.run_cursor import RunCursor, fits
from domain.stream import Stream

FRAMES_AHEAD = 32
"""Frames a stream may have queued for the merge: enough that a backfill is handed over
in runs, not one task switch per frame."""

RunEndReason = Literal["erased", "too_many_streams", "token_expired", "token_revoked",
                       "shutdown"]


@dataclass(frozen=True)
class StreamFrame:
    """A frame of one stream of the run, and the run's cursor once it is handed on."""

    stream_id: str
    frame: RecordFrame | LiveFrame | ResyncFrame | EndFrame
    cursor: RunCursor


@dataclass(frozen=True)
class RunEndFrame:
    reason: RunEndReason
    cursor: RunCursor


RunFrame = StreamFrame | KeepaliveFrame | RunEndFrame


class RunStreams(NamedTuple):
    """The run as a listing finds it: the streams a run follow covers, whether the run
    holds any stream, and whether every one of them is erased."""

    covered: Sequence[Stream]
    exists: bool
    erased: bool


@dataclass(eq=False)
class _Part:
    stream_id: str
    follow: OpenFollow
    turns: asyncio.Semaphore = field(default_factory=lambda: asyncio.Semaphore(FRAMES_AHEAD))
    """One taken from taking a frame of the follow until the merge takes it from the queue."""
    pump: asyncio.Task[None] | None = None


_Item = tuple[_Part, Frame | Exception] | None
"""A stream's frame (or the error that ended it), or None: the run follow was ended."""


class RunFollow:
    """Use `start()` once (`RunFollower` does), then `frames()` once, then `close()`."""

    def __init__(self, cursor: RunCursor, listing: Callable[[], Awaitable[RunStreams]],
                 opener: Callable[[Stream, int], Awaitable[OpenFollow]], node: NodeSettings,
                 stack: AsyncExitStack, expires_in: float | None = None,
                 on_close: Callable[[RunFollow], None] | None = None) -> None:
        self.cursor = cursor
        self._listing = listing
        self._opener = opener
        self._node = node
        self._stack = stack
        self._expires_in = expires_in
        self._on_close = on_close
        self._parts: dict[str, _Part] = {}
        self._ended_streams: set[str] = set()
        self._pending: list[StreamFrame] = []
        """Resync frames of streams whose cursor was pruned when they joined."""
        self._queue: deque[_Item] = deque()
        self._waiter: asyncio.Future[None] | None = None
        self._running = False
        self._end_reason: RunEndReason | None = None
        self._ends_at = float("inf")

    @property
    def stream_ids(self) -> frozenset[str]:
        """The streams this run follow covers now."""
        return frozenset(self._parts)

    @property
    def queued(self) -> int:
        """Frames the streams have handed over that the merge has not handed on yet."""
        return len(self._queue)

    async def start(self, streams: Sequence[Stream]) -> None:
        """Join these streams, from the cursor's positions; the cursor then names only the
        streams it covers (a stream that joins later starts at 0). A cursor beyond a
        stream's head is refused here (`FutureCursor`), before any frame."""
        await self._join(streams)
        self.cursor = self.cursor.only({*self._parts, *self._ended_streams})

    def end(self, reason: RunEndReason) -> None:
        """End with `RunEndFrame(reason)` at the next frame; the first reason given stays."""
        if self._end_reason is not None:
            return
        self._end_reason = reason
        self._ends_at = float("-inf")
        self._offer(None)

    async def close(self) -> None:
        if self._on_close is not None:
            self._on_close(self)
            self._on_close = None
        parts, self._parts = list(self._parts.values()), {}
        for part in parts:
            await self._leave(part)
        await self._stack.aclose()

    async def frames(self) -> AsyncIterator[RunFrame]:
        loop = asyncio.get_running_loop()
        self._running = True
        tick_at = loop.time() + self._node.keepalive_seconds
        if self._expires_in is not None:
            self._ends_at = min(self._ends_at, loop.time() + self._expires_in)
        for part in self._parts.values():
            self._pump(part)
        while True:
            while self._pending:
                yield self._pending.pop(0)
            if loop.time() >= self._ends_at:
                yield RunEndFrame(self._end_reason or "token_expired", self.cursor)
                return
            item = await self._take(min(tick_at, self._ends_at) - loop.time())
            if item is not None:
                part, got = item
                part.turns.release()
                if isinstance(got, Exception):
                    raise got
                async for frame in self._serve(part, got):
                    yield frame
            # The tick keeps its own deadline, frames or none: a backlog must not postpone
            # the listing that lets new streams join.
            if loop.time() >= tick_at and loop.time() < self._ends_at:
                tick_at = loop.time() + self._node.keepalive_seconds
                yield KeepaliveFrame()
                await self._refresh()

    def _offer(self, item: _Item) -> None:
        self._queue.append(item)
        if self._waiter is not None and not self._waiter.done():
            self._waiter.set_result(None)

    async def _take(self, timeout: float) -> _Item:
        """The next queued item, or None when `timeout` passes first."""
        if not self._queue and timeout > 0:
            loop = asyncio.get_running_loop()
            self._waiter = waiter = loop.create_future()
            timer = loop.call_later(timeout, _wake, waiter)
            try:
                await waiter
            finally:
                timer.cancel()
                self._waiter = None
        return self._queue.popleft() if self._queue else None

    async def _serve(self, part: _Part, frame: Frame) -> AsyncIterator[RunFrame]:
        match frame:
            case RecordFrame(record=record):
                self.cursor = self.cursor.moved(part.stream_id, record.sequence)
                yield StreamFrame(part.stream_id, frame, self.cursor)
            case LiveFrame():
                yield StreamFrame(part.stream_id, frame, self.cursor)
            case ResyncFrame() | EndFrame(reason="closed"):
                yield StreamFrame(part.stream_id, frame, self.cursor)
                self._parts.pop(part.stream_id, None)
                self._ended_streams.add(part.stream_id)
                await self._leave(part)
                await self._refresh()
            case _:
                pass  # a part never ends early (it has no deadline and is not tracked)

    async def _refresh(self) -> None:
        """List the run again: join the streams created since, or end."""
        listed = await self._listing()
        if listed.erased and not self._parts:
            self.end("erased")
            return
        covered = {*self._parts, *self._ended_streams,
                   *(stream.stream_id for stream in listed.covered)}
        if not fits(covered):
            self.end("too_many_streams")
            return
        await self._join(listed.covered)

    async def _join(self, streams: Sequence[Stream]) -> None:
        for stream in streams:
            stream_id = stream.stream_id
            if stream_id in self._parts or stream_id in self._ended_streams:
                continue
            try:
                follow = await self._opener(stream, self.cursor.at(stream_id))
            except NotFound:
                continue  # erased and gone since it was listed
            except CursorPruned as pruned:
                self._ended_streams.add(stream_id)
                self._pending.append(StreamFrame(stream_id, ResyncFrame(
                    pruned.requested, pruned.earliest, pruned.latest), self.cursor))
                continue
            part = _Part(stream_id, follow)
            self._parts[stream_id] = part
            if self._running:
                self._pump(part)

    def _pump(self, part: _Part) -> None:
        part.pump = asyncio.create_task(self._forward(part))

    async def _forward(self, part: _Part) -> None:
        """Hand the stream's frames to the merge, one at a time; the follow's own
        keepalives stay here (the run follow ticks for all its streams)."""
        # `frames()` is an async generator: closed here, even when the pump is cancelled.
        frames = cast(AsyncGenerator[Frame, None], part.follow.frames())
        try:
            async for frame in frames:
                if isinstance(frame, KeepaliveFrame):
                    continue
                await part.turns.acquire()
                self._offer((part, frame))
        except Exception as error:  # the store failed: the run follow ends with it
            await part.turns.acquire()
            self._offer((part, error))
        finally:
            await frames.aclose()

    async def _leave(self, part: _Part) -> None:
        if part.pump is not None and not part.pump.done():
            part.pump.cancel()
            await asyncio.wait({part.pump})
        await part.follow.close()


def _wake(waiter: asyncio.Future[None]) -> None:
    if not waiter.done():
        waiter.set_result(None)
