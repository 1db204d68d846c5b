"""Opening follows: who may follow a stream here, from which cursor, holding which slot.

`Follower` checks access and the cursor before any frame is produced, so a refused or
pruned cursor is an HTTP error, not a broken stream; the loop itself is `OpenFollow`
(`follow_loop.py`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from contextlib import AsyncExitStack
from typing import Literal, Protocol

from application.access import stream_for_reading, stream_key
from application.follow_frames import EndFrame, RecordFrame, ResyncFrame
from application.follow_loop import OpenFollow
from application.node import NodeSettings
from application.ports.clock import Clock
from application.ports.errors import NodeDraining
from application.ports.records import RecordReader
from application.ports.streams import StreamStore
from application.ports.waking import GapEvidence, WakeBus, WakeSubscription
from application.revocations import RevocationList
from application.subscription_slots import SubscriptionSlots
from domain.cursor import check_cursor
from domain.identifiers import StreamKey
from domain.principal import Principal
from domain.stream import Stream


class Endable(Protocol):
    """What the follower ends on revocation or drain: a follow, or a run follow."""

    def end(self, reason: Literal["token_revoked", "shutdown"]) -> None: ...


class Follower:
    """Opens follows: checks access and the cursor before any frame is produced, so a
    refused or pruned cursor is an HTTP error, not a broken stream. Every follow holds one
    of its principal's subscription slots until it closes (`SubscriptionSlots`), and ends
    when its credential is revoked (`watch_revocations`)."""

    def __init__(self, store: StreamStore, reader: RecordReader, bus: WakeBus, gaps: GapEvidence,
                 node: NodeSettings, slots: SubscriptionSlots, clock: Clock) -> None:
        self._clock = clock
        self._store = store
        self._reader = reader
        self._bus = bus
        self._gaps = gaps
        self._node = node
        self.slots = slots
        self._open: dict[Endable, Principal] = {}
        self._draining = False
        self._revocations: RevocationList | None = None

    async def authorize(self, principal: Principal, run_id: str,
                        stream_id: str) -> tuple[StreamKey, Stream]:
        """Whether the principal may follow the stream here (scope, tenant, run binding,
        readers pin, egress region): the same rules for a subscription and for a subscribe
        token, which stands in for one."""
        key = stream_key(principal, run_id, stream_id)
        stream = await stream_for_reading(self._store, principal, key, self._node.region,
                                          content=True, now=self._clock.now())
        return key, stream

    async def open(self, principal: Principal, run_id: str, stream_id: str, after: int,
                   live: bool = False, expires_in: float | None = None) -> OpenFollow:
        """`expires_in`: seconds until the principal's credential expires; the follow ends
        there with `EndFrame("token_expired")`."""
        self.refuse_when_draining()
        key, stream = await self.authorize(principal, run_id, stream_id)
        lease = await self.slots.take(principal)
        stack = AsyncExitStack()
        stack.push_async_callback(self.slots.release, lease)
        follow = await self._start(key, stream, after, live, stack, expires_in, self._forget)
        self.track(follow, principal)
        return follow

    async def open_part(self, stream: Stream, after: int, live: bool) -> OpenFollow:
        """A follow of one stream of a run follow (`run_follow.py`), which checked access,
        holds the one slot and is tracked itself: this follow holds only its wake
        registration, and ends only by the stream's close or by being closed."""
        return await self._start(stream.key, stream, after, live, AsyncExitStack(), None, None)

    async def _start(self, key: StreamKey, stream: Stream, after: int, live: bool,
                     stack: AsyncExitStack, expires_in: float | None,
                     on_close: Callable[[OpenFollow], None] | None) -> OpenFollow:
        # A best-effort stream has nothing stored: its readers exist for the live chunks.
        live = live or stream.definition.mode == "best_effort"
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
        return OpenFollow(key, after, self._reader, self._gaps, self._node, stack, wakes,
                          page, expires_in, on_close=on_close, live=live)

    def refuse_when_draining(self) -> None:
        if self._draining:
            raise NodeDraining("this node is shutting down; subscribe at another node")

    def track(self, follow: Endable, principal: Principal) -> None:
        """End `follow` when its principal's credential is revoked or the node drains, until
        it is forgotten (`forget`)."""
        self._open[follow] = principal
        # The request was authenticated before the awaits that opened it: a revocation read
        # since then found no follow to end, so this one checks for itself.
        revocations = self._revocations
        if revocations is not None and revocations.refuses_principal(principal):
            follow.end("token_revoked")

    def forget(self, follow: Endable) -> None:
        self._open.pop(follow, None)

    async def wait_beyond(self, principal: Principal, run_id: str, stream_id: str, after: int,
                          timeout: float) -> None:
        """Wait at most `timeout` seconds for a record above `after`, the close, or the end
        of the follow (a resync, a drain), holding a subscription slot meanwhile (429 at
        the principal's cap) and no database connection (a long-polled read)."""
        follow = await self.open(principal, run_id, stream_id, after)
        try:
            async with asyncio.timeout(timeout):
                async for frame in follow.frames():
                    if isinstance(frame, RecordFrame | EndFrame | ResyncFrame):
                        return
        except TimeoutError:
            return
        finally:
            await follow.close()

    def _forget(self, follow: OpenFollow) -> None:
        self.forget(follow)

    def watch_revocations(self, revocations: RevocationList) -> None:
        """From now on, every open follow whose credential `revocations` refuses (its own
        token id or its parent's) ends with `EndFrame("token_revoked")` at its next frame,
        as soon as the list has read the revocation (ADR 0060)."""
        self._revocations = revocations
        revocations.on_change(self._end_revoked)

    def _end_revoked(self) -> None:
        revocations = self._revocations
        assert revocations is not None
        for follow, principal in self._open.items():
            if revocations.refuses_principal(principal):
                follow.end("token_revoked")

    def drain(self) -> int:
        """The node is about to stop: every open follow ends with `EndFrame("shutdown")`,
        and no new one opens. Returns how many were ended."""
        self._draining = True
        for follow in self._open:
            follow.end("shutdown")
        return len(self._open)

    @property
    def open_follows(self) -> int:
        return len(self._open)

    async def close(self) -> None:
        """The node is shutting down: stop renewing slots."""
        await self.slots.close()
