"""The follow loop: backfill, then follow live, losing and repeating nothing.

1. register for wakes before reading history;
2. backfill records above the cursor in pages;
3. follow: on each wake and on each keepalive tick (even without a wake) take
   the records above the cursor; drop duplicates at the boundary. Ticks come
   once per keepalive interval whatever else arrives, so a lost wake is
   repaired within one interval even under steady live chunks;
4. repair: a wake that reveals a gap is served by reading the gap from the
   store first, and the gap is reported as evidence;
5. end: `EndFrame("closed")` once a closed stream is delivered whole and, for a live
   follow, once its subscription handed it the closing wake, which the bus orders after
   every chunk published before the close (ADR 0056); a close learnt from a read waits
   for that wake, or for a tick that finds nothing queued a whole keepalive interval
   after the close was known. `EndFrame("token_expired" | "token_revoked" | "shutdown")`
   when the follow's credential expires, it (or the token it was minted from) is revoked
   (`Follower.watch_revocations`), or the node drains (`Follower.drain`): nothing is sent
   after them, and the reader resumes from `last_sequence` losing nothing (ADR 0023,
   0029, 0060).

Served directly (`serve_directly`, ADR 0079): a wake that finds the follow caught up and
waiting, carries its records right after the cursor and does not close, is served from the
publisher's call, straight to the reader's ready `DirectSink`, by the same rules as step 3;
any other wake goes to the follow's task as above.

The transport only turns frames into bytes; everything that decides what a
reader sees lives here, and is tested with the in-memory bus. A follow is opened by
`Follower` (`follower.py`), which checks access and the cursor first.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from contextlib import AsyncExitStack

from application.follow_frames import (
    EndFrame,
    EndReason,
    Frame,
    KeepaliveFrame,
    LiveFrame,
    RecordFrame,
    ResyncFrame,
)
from application.node import NodeSettings
from application.ports.records import RecordPage, RecordReader
from application.ports.waking import DirectSink, GapEvidence, LiveChunk, Wake, WakeSubscription
from domain.identifiers import StreamKey


class OpenFollow:
    """One reader's open follow of one stream, and its position (opened by `Follower`). Use
    `frames()` once, then `close()`."""

    def __init__(self, key: StreamKey, cursor: int, reader: RecordReader, gaps: GapEvidence,
                 node: NodeSettings, stack: AsyncExitStack, wakes: WakeSubscription | None,
                 first_page: RecordPage, expires_in: float | None = None,
                 on_close: Callable[[OpenFollow], None] | None = None,
                 live: bool = False) -> None:
        self.key = key
        self.cursor = cursor
        self._reader = reader
        self._gaps = gaps
        self._node = node
        self._stack = stack
        self._wakes = wakes
        self._page: RecordPage | None = first_page
        self._head = first_page.head
        self._closed = first_page.closed
        self._close_heard = not live
        """Whether the subscription has handed over the closing wake (a follow without
        live chunks has nothing to wait for)."""
        self._close_known_at: float | None = None
        """Loop time at which a read first told of the close, while not yet heard."""
        self._quiet = False
        """Whether the last wait on the subscription ended at its tick with nothing queued."""
        self._tick_at = 0.0
        """Loop time of the next keepalive tick: a re-read at least once per interval."""
        self._expires_in = expires_in
        self._ends_at = float("inf")
        """Loop time at which the follow ends early: its credential expires, or it is
        ended (`end`: then it is in the past)."""
        self._end_reason: EndReason = "token_expired"
        self._ended = False
        self._on_close = on_close
        self._sink: DirectSink | None = None
        self._waiting = False
        """Whether the task waits on the subscription, with nothing of its own pending."""

    @property
    def head(self) -> int:
        """The highest sequence this follow knows the stream to hold (from its reads and
        wakes, before it serves their records): the reader is caught up at `cursor >= head`."""
        return self._head

    @property
    def closed(self) -> bool:
        """Whether this follow knows the stream to be closed."""
        return self._closed

    @property
    def holds_wake_registration(self) -> bool:
        return self._wakes is not None

    async def close(self) -> None:
        if self._on_close is not None:
            self._on_close(self)
            self._on_close = None
        self._wakes = None
        self._sink = None
        await self._stack.aclose()

    def serve_directly(self, sink: DirectSink) -> None:
        """From now on, wakes this follow can serve as it waits caught up go straight to
        `sink` from the publisher's call, without a turn of the follow's task."""
        self._sink = sink
        if self._wakes is not None:
            self._wakes.offer(self._take_wake)

    def _take_wake(self, wake: Wake) -> bool:
        """Serve `wake` now, as `_on_wake` would, or leave it (False) to the task: taken only
        while the task waits with nothing pending, the follow not past its end, the wake
        carrying its records with none missing after the cursor and not closing, and the
        sink ready. Duplicates are dropped; the cursor moves as the frames are written."""
        sink, records = self._sink, wake.records
        if (sink is None or not self._waiting or records is None or wake.closed
                or self._page is not None or self._past_end() or not sink.ready()):
            return False
        fresh = (records if not records or records[0].sequence > self.cursor
                 else tuple(record for record in records if record.sequence > self.cursor))
        head = max(self._head, wake.head)
        if fresh[0].sequence > self.cursor + 1 if fresh else head > self.cursor:
            return False  # a gap: the task repairs it from the store
        self._head = head
        if fresh:
            sink.send_records(self.key, fresh)
            self.cursor = fresh[-1].sequence
        return True

    def end(self, reason: EndReason) -> None:
        """End with `EndFrame(reason)` at the next frame, without waiting for a wake; the
        first reason given stays."""
        if self._ended:
            return
        self._ended = True
        self._end_reason = reason
        self._ends_at = float("-inf")
        if self._wakes is not None:
            self._wakes.interrupt()

    async def frames(self) -> AsyncIterator[Frame]:
        """Backfill, then follow, until the stream is delivered whole or the follow ends
        early; a backfill that finds the cursor pruned ends it with a resync."""
        loop = asyncio.get_running_loop()
        self._tick_at = loop.time() + self._node.keepalive_seconds
        if self._expires_in is not None and not self._ended:
            self._ends_at = loop.time() + self._expires_in
        while not self._past_end():
            if self._page is not None:  # a wake served live leaves no page to backfill
                async for frame in self._backfill():
                    yield frame
                    if isinstance(frame, ResyncFrame):
                        return
            if self._closed and self.cursor >= self._head and self._close_delivered():
                yield EndFrame(self.cursor)
                return
            if not self._past_end():
                async for frame in self._follow():
                    yield frame
        yield EndFrame(self.cursor, self._end_reason)

    async def _backfill(self) -> AsyncIterator[Frame]:
        """Serve the pending page, then the pages after it, until caught up (or past the
        end). A page that starts above the cursor is a resync, the last frame."""
        page, self._page = self._page, None
        while page is not None:
            if page.earliest > self.cursor + 1:
                yield ResyncFrame(self.cursor, page.earliest, page.head)
                return
            self._head = max(self._head, page.head)
            self._closed = self._closed or page.closed
            for record in page.records:
                if record.sequence <= self.cursor:
                    continue
                if self._past_end():
                    return
                yield RecordFrame(record)
                self.cursor = record.sequence
            if self._past_end():
                return
            page = await self._next_page(page)

    async def _next_page(self, served: RecordPage) -> RecordPage | None:
        """Read the next page or stop: the page after `served`, or None once caught up
        (a page that brings nothing new still tells where the stream's head is)."""
        if len(served.records) < self._node.page_size and self._head <= self.cursor:
            return None
        page = await self._read()
        if not page.records and page.earliest <= self.cursor + 1:
            self._head = page.head
            self._closed = self._closed or page.closed
            return None
        return page

    async def _follow(self) -> AsyncIterator[Frame]:
        """Wait for one wake, live chunk or keepalive tick and serve it; a read it calls
        for is left pending for the next backfill."""
        if self._wakes is None:
            self._page = await self._read()
            return
        loop = asyncio.get_running_loop()
        # The tick keeps its own deadline: a wake or live chunk arriving before it
        # must not postpone it, or steady chatter would starve the backstop re-read
        # that repairs a lost wake.
        remaining = min(self._tick_at, self._ends_at) - loop.time()
        self._waiting = True
        try:
            signal = await self._wakes.next(remaining) if remaining > 0 else None
        finally:
            self._waiting = False
        self._quiet = signal is None and remaining > 0
        if self._past_end():
            return
        if signal is None:
            self._tick_at = loop.time() + self._node.keepalive_seconds
            yield KeepaliveFrame()
            self._page = await self._read()
        elif isinstance(signal, LiveChunk):
            yield LiveFrame(signal)
        else:
            async for frame in self._on_wake(signal):
                yield frame

    def _past_end(self) -> bool:
        return asyncio.get_running_loop().time() >= self._ends_at

    def _close_delivered(self) -> bool:
        """Whether every live chunk published before the close has been served: its
        closing wake came, or (should it never come) the close has been known for a
        keepalive interval and the subscription had nothing queued at the last tick."""
        if self._close_heard or self._wakes is None:
            return True
        now = asyncio.get_running_loop().time()
        if self._close_known_at is None:
            self._close_known_at = now
        return self._quiet and now - self._close_known_at >= self._node.keepalive_seconds

    async def _on_wake(self, wake: Wake) -> AsyncIterator[Frame]:
        self._head = max(self._head, wake.head)
        self._closed = self._closed or wake.closed
        self._close_heard = self._close_heard or wake.closed
        if wake.records is None:
            self._page = await self._read()
            return
        fresh = [record for record in wake.records if record.sequence > self.cursor]
        missed = fresh[0].sequence > self.cursor + 1 if fresh else self._head > self.cursor
        if missed:
            # Records between our cursor and this wake were never seen: a lost
            # wake. Serve the gap from the store before anything newer.
            await self._gaps.record_gap(self.key, self.cursor + 1,
                                        fresh[0].sequence if fresh else self._head)
            self._page = await self._read()
            return
        for record in fresh:
            if self._past_end():
                return
            yield RecordFrame(record)
            self.cursor = record.sequence

    async def _read(self) -> RecordPage:
        return await self._reader.read_page(self.key, self.cursor, self._node.page_size)
