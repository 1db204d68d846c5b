"""The follow loop: backfill, then follow live, losing and repeating nothing.

1. register for wakes before reading history;
2. backfill records above the cursor in pages;
3. follow: on each wake and on each keepalive tick (even without a wake) take
   the records above the cursor; drop duplicates at the boundary. Ticks come
   once per keepalive interval whatever else arrives, so a lost wake is
   repaired within one interval even under steady live chunks;
4. repair: a wake that reveals a gap is served by reading the gap from the
   store first, and the gap is reported as evidence;
5. end: `EndFrame("closed")` once a closed stream is delivered whole,
   `EndFrame("token_expired")` when the credential that opened the follow expires,
   or `EndFrame("shutdown")` when the node drains (`Follower.drain`). Nothing is
   sent after either of the last two; the reader resumes from `last_sequence`
   (with a fresh credential, or at another node) and loses nothing (ADR 0023,
   ADR 0029).

The transport only turns frames into bytes; everything that decides what a
reader sees lives here, and is tested with the in-memory bus.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from contextlib import AsyncExitStack
from dataclasses import dataclass
from typing import Literal

from application.access import stream_for_reading, stream_key
from application.node import NodeSettings
from application.ports import (
    GapEvidence,
    LiveChunk,
    NodeDraining,
    RecordPage,
    RecordReader,
    StoredRecord,
    StreamStore,
    Wake,
    WakeBus,
    WakeSubscription,
)
from application.subscription_slots import SubscriptionSlots
from domain.cursor import check_cursor
from domain.identifiers import StreamKey
from domain.principal import Principal
from domain.stream import Stream


@dataclass(frozen=True)
class RecordFrame:
    record: StoredRecord


@dataclass(frozen=True)
class LiveFrame:
    chunk: LiveChunk


@dataclass(frozen=True)
class KeepaliveFrame:
    pass


EndReason = Literal["closed", "token_expired", "shutdown"]


@dataclass(frozen=True)
class EndFrame:
    last_sequence: int
    reason: EndReason = "closed"


@dataclass(frozen=True)
class ResyncFrame:
    requested: int
    earliest: int
    latest: int


Frame = RecordFrame | LiveFrame | KeepaliveFrame | EndFrame | ResyncFrame


class OpenFollow:
    """One reader's open follow of one stream, and its position (opened by `Follower`). Use
    `frames()` once, then `close()`."""

    def __init__(self, key: StreamKey, cursor: int, reader: RecordReader, gaps: GapEvidence,
                 node: NodeSettings, stack: AsyncExitStack, wakes: WakeSubscription | None,
                 first_page: RecordPage, expires_in: float | None = None,
                 on_close: Callable[[OpenFollow], None] | None = None) -> None:
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
        self._tick_at = 0.0
        """Loop time of the next keepalive tick: a re-read at least once per interval."""
        self._expires_in = expires_in
        self._ends_at = float("inf")
        """Loop time at which the follow ends early: its credential expires, or the node
        drains (then it is in the past)."""
        self._end_reason: EndReason = "token_expired"
        self._on_close = on_close

    @property
    def holds_wake_registration(self) -> bool:
        return self._wakes is not None

    async def close(self) -> None:
        if self._on_close is not None:
            self._on_close(self)
            self._on_close = None
        self._wakes = None
        await self._stack.aclose()

    def drain(self) -> None:
        """End with `EndFrame("shutdown")` at the next frame, without waiting for a wake."""
        self._end_reason = "shutdown"
        self._ends_at = float("-inf")
        if self._wakes is not None:
            self._wakes.interrupt()

    async def frames(self) -> AsyncIterator[Frame]:
        """Backfill, then follow, until the stream is delivered whole or the follow ends
        early; a backfill that finds the cursor pruned ends it with a resync."""
        loop = asyncio.get_running_loop()
        self._tick_at = loop.time() + self._node.keepalive_seconds
        if self._expires_in is not None and self._end_reason != "shutdown":
            self._ends_at = loop.time() + self._expires_in
        while not self._past_end():
            async for frame in self._backfill():
                yield frame
                if isinstance(frame, ResyncFrame):
                    return
            if self._closed and self.cursor >= self._head:
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
        signal = await self._wakes.next(remaining) if remaining > 0 else None
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

    async def _on_wake(self, wake: Wake) -> AsyncIterator[Frame]:
        self._head = max(self._head, wake.head)
        self._closed = self._closed or wake.closed
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


class Follower:
    """Opens follows: checks access and the cursor before any frame is produced, so a
    refused or pruned cursor is an HTTP error, not a broken stream. Every follow holds one
    of its principal's subscription slots until it closes (`SubscriptionSlots`)."""

    def __init__(self, store: StreamStore, reader: RecordReader, bus: WakeBus, gaps: GapEvidence,
                 node: NodeSettings, slots: SubscriptionSlots) -> None:
        self._store = store
        self._reader = reader
        self._bus = bus
        self._gaps = gaps
        self._node = node
        self.slots = slots
        self._open: set[OpenFollow] = set()
        self._draining = False

    async def authorize(self, principal: Principal, run_id: str,
                        stream_id: str) -> tuple[StreamKey, Stream]:
        """Whether the principal may follow the stream here (scope, tenant, run binding,
        readers pin, egress region): the same rules for a subscription and for a subscribe
        token, which stands in for one."""
        key = stream_key(principal, run_id, stream_id)
        stream = await stream_for_reading(self._store, principal, key, self._node.region,
                                          content=True)
        return key, stream

    async def open(self, principal: Principal, run_id: str, stream_id: str, after: int,
                   live: bool = False, expires_in: float | None = None) -> OpenFollow:
        """`expires_in`: seconds until the principal's credential expires; the follow ends
        there with `EndFrame("token_expired")`."""
        if self._draining:
            raise NodeDraining("this node is shutting down; subscribe at another node")
        key, stream = await self.authorize(principal, run_id, stream_id)
        # A best-effort stream has nothing stored: its readers exist for the live chunks.
        live = live or stream.definition.mode == "best_effort"
        lease = await self.slots.take(principal)
        stack = AsyncExitStack()
        stack.push_async_callback(self.slots.release, lease)
        try:
            # The registration has a stack of its own: a closed stream gives it back at
            # once, while the slot stays taken for as long as the follow lives.
            registration = await stack.enter_async_context(AsyncExitStack())
            wakes: WakeSubscription | None = await registration.enter_async_context(
                self._bus.subscribe(key, live))
            page = await self._reader.read_page(key, after, self._node.page_size)
            check_cursor(after, page.earliest, page.head)
            if page.closed:
                # A closed stream gets nothing new: serve it without a registration.
                await registration.aclose()
                wakes = None
        except BaseException:
            await stack.aclose()
            raise
        follow = OpenFollow(key, after, self._reader, self._gaps, self._node, stack, wakes,
                            page, expires_in, on_close=self._open.discard)
        self._open.add(follow)
        return follow

    def drain(self) -> int:
        """The node is about to stop: every open follow ends with `EndFrame("shutdown")`,
        and no new one opens. Returns how many were ended."""
        self._draining = True
        for follow in self._open:
            follow.drain()
        return len(self._open)

    @property
    def open_follows(self) -> int:
        return len(self._open)

    async def close(self) -> None:
        """The node is shutting down: stop renewing slots."""
        await self.slots.close()
