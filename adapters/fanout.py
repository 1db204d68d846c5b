"""Fan-out of wakes and live chunks to the readers of one process.

Shared by the in-memory bus and the Postgres LISTEN adapter: whatever carries
signals between processes, one process delivers them to its local readers
through this hub, each reader with its own bounded queue.
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager

from application.ports.records import StoredRecord
from application.ports.waking import LiveChunk, Wake
from domain.identifiers import StreamKey

log = logging.getLogger(__name__)

WAKE_QUEUE_LIMIT = 64
LIVE_QUEUE_LIMIT = 256
DEADLINE_SLACK = 0.001
"""Seconds within which a wait's deadline reuses the timer set for the last one."""


class Subscription:
    """One reader's queue. Never blocks a publisher: overflowing wakes collapse into
    a single "re-read" wake, overflowing live chunks are dropped and counted.

    Rules:
    - wakes and live chunks come out in the order they were pushed: a wake that says
      closed never overtakes a chunk pushed before it (ADR 0056);
    - the collapsed wake takes the place of the newest wake it folds in, since it may
      say closed;
    - each kind has its own bound (`WAKE_QUEUE_LIMIT` wakes, `LIVE_QUEUE_LIMIT` chunks);
    - a wake pushed while nothing is queued goes first to the `offer` taker, if any, in
      the pusher's call; one it takes is not queued, one it fails on is (ADR 0079).
    """

    def __init__(self, key: StreamKey, live: bool) -> None:
        self.key = key
        self.live = live
        self.dropped_live = 0
        self._signals: deque[Wake | LiveChunk] = deque()
        self._wakes = 0
        self._chunks = 0
        self._signal = asyncio.Event()
        self._deadline: asyncio.TimerHandle | None = None
        self._deadline_at = 0.0
        self._taker: Callable[[Wake], bool] | None = None

    def offer(self, taker: Callable[[Wake], bool] | None) -> None:
        self._taker = taker

    def push_wake(self, wake: Wake) -> None:
        if self._taker is not None and not self._signals and self._taken(self._taker, wake):
            return
        if self._wakes >= WAKE_QUEUE_LIMIT:
            wake = self._collapse(wake)
        self._signals.append(wake)
        self._wakes += 1
        self._signal.set()

    @staticmethod
    def _taken(taker: Callable[[Wake], bool], wake: Wake) -> bool:
        try:
            return taker(wake)
        except Exception:  # one reader's failure must not stop the fan-out
            log.exception("a direct wake taker failed; the wake is queued")
            return False

    def _collapse(self, wake: Wake) -> Wake:
        queued = [signal for signal in self._signals if type(signal) is Wake]
        self._signals = deque(signal for signal in self._signals if type(signal) is not Wake)
        self._wakes = 0
        return Wake(self.key, max(wake.head, *(each.head for each in queued)),
                    wake.closed or any(each.closed for each in queued), None)

    def push_live(self, chunk: LiveChunk) -> None:
        if not self.live:
            return
        if self._chunks >= LIVE_QUEUE_LIMIT:
            self.dropped_live += 1
            return
        self._signals.append(chunk)
        self._chunks += 1
        self._signal.set()

    def interrupt(self) -> None:
        self._signal.set()

    def close(self) -> None:
        """No timer of this subscription outlives it."""
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None

    async def next(self, timeout: float) -> Wake | LiveChunk | None:
        """The next wake or live chunk, or None once `timeout` seconds have passed (or
        on `interrupt`) with nothing queued."""
        if not self._signals:
            self._await_deadline(timeout)
            self._signal.clear()
            await self._signal.wait()
            if not self._signals:
                return None
        signal = self._signals.popleft()
        if type(signal) is Wake:
            self._wakes -= 1
        else:
            self._chunks -= 1
        return signal

    def _await_deadline(self, timeout: float) -> None:
        """A follow waits for the same deadline (its next keepalive tick) wake after wake:
        one timer serves all those waits, rather than a timer set and cancelled per wake
        (ADR 0048)."""
        loop = asyncio.get_running_loop()
        at = loop.time() + timeout
        if self._deadline is not None and abs(self._deadline_at - at) <= DEADLINE_SLACK:
            return
        if self._deadline is not None:
            self._deadline.cancel()
        self._deadline, self._deadline_at = loop.call_at(at, self._on_deadline), at

    def _on_deadline(self) -> None:
        self._deadline = None
        self._signal.set()


class FanoutHub:
    """Registry of local subscriptions by stream."""

    def __init__(self) -> None:
        self._subscriptions: dict[StreamKey, set[Subscription]] = {}

    @property
    def reader_count(self) -> int:
        return sum(len(subs) for subs in self._subscriptions.values())

    def has_readers(self, key: StreamKey) -> bool:
        return bool(self._subscriptions.get(key))

    @asynccontextmanager
    async def subscribe(self, key: StreamKey, live: bool = False) -> AsyncIterator[Subscription]:
        subscription = Subscription(key, live)
        self._subscriptions.setdefault(key, set()).add(subscription)
        try:
            yield subscription
        finally:
            subscription.close()
            subs = self._subscriptions.get(key)
            if subs is not None:
                subs.discard(subscription)
                if not subs:
                    del self._subscriptions[key]

    def deliver_wake(self, wake: Wake) -> None:
        for subscription in tuple(self._subscriptions.get(wake.stream, ())):
            subscription.push_wake(wake)

    def deliver_live(self, chunk: LiveChunk) -> None:
        for subscription in tuple(self._subscriptions.get(chunk.stream, ())):
            subscription.push_live(chunk)

    def reset_all(self) -> None:
        """After a lost connection every reader must re-read from its cursor."""
        for key, subs in tuple(self._subscriptions.items()):
            for subscription in tuple(subs):
                subscription.push_wake(Wake(key, 0, False, None))


WAKE_CARRY_LIMIT_BYTES = 6000


def carried_records(records: tuple[StoredRecord, ...]) -> tuple[StoredRecord, ...] | None:
    """Small batches (under 6000 bytes) ride along with their wake (readers then skip a
    read); larger ones do not fit a NOTIFY payload, so readers re-read from the store."""
    if sum(record.size for record in records) >= WAKE_CARRY_LIMIT_BYTES:
        return None
    return records
