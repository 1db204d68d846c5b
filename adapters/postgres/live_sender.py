"""The live chunks one process sends: queued, then numbered and NOTIFYed in batches, one
transaction each (`live_seq.py`); the wake bus's rules say how they reach readers (`bus.py`).

Rules:
- `publish` enqueues, bounded (`queue_limit`): past it, and while the sender is not
  running, chunks are dropped and counted, never raised: a producer never fails because of
  readers or the database;
- one task sends the queue oldest first, in batches of at most `batch`; a batch whose
  transaction fails is dropped and counted;
- `publish` returns once its chunks' transaction has committed (or failed): one future
  per call, never a timer; `close` releases every call still waiting;
- every committed batch is handed to `on_sent`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import asyncpg

from adapters.postgres.live_seq import number_and_notify
from adapters.postgres.notifications import encode_live
from application.ports.waking import LiveChunk, LiveDraft

log = logging.getLogger(__name__)


@dataclass
class LiveCounts:
    sent: int = 0
    dropped: int = 0


class LiveSender:
    def __init__(self, pool: asyncpg.Pool, origin: str, queue_limit: int, batch: int,
                 counts: LiveCounts, on_sent: Callable[[Sequence[LiveChunk]], None]) -> None:
        self._pool = pool
        self._origin = origin
        self._queue_limit = queue_limit
        self._batch = batch
        self._counts = counts
        self._on_sent = on_sent
        self._queue: deque[LiveDraft] = deque()
        self._ready = asyncio.Event()
        self._queued = 0
        """Chunks ever enqueued; `_done` of them were committed or dropped."""
        self._done = 0
        self._waiters: deque[tuple[int, asyncio.Future[None]]] = deque()
        """(how many chunks must be done, the publish waiting for it), oldest first."""
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        self._task = asyncio.create_task(self._send(), name="runnel-live-sender")

    async def close(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        self._task = None
        self._done = self._queued
        self._release_waiters()

    async def publish(self, drafts: Sequence[LiveDraft]) -> None:
        room = self._queue_limit - len(self._queue) if self._task else 0
        taken = drafts[:max(room, 0)]
        self._counts.dropped += len(drafts) - len(taken)
        if not taken:
            return
        self._queue.extend(taken)
        self._queued += len(taken)
        placed = asyncio.get_running_loop().create_future()
        self._waiters.append((self._queued, placed))
        self._ready.set()
        await placed

    async def _send(self) -> None:
        while True:
            if not self._queue:
                self._ready.clear()
                await self._ready.wait()
                continue
            batch = [self._queue.popleft() for _ in range(min(len(self._queue), self._batch))]
            try:
                async with self._pool.acquire() as connection:
                    chunks, unsent = await number_and_notify(
                        connection, batch, lambda chunk: encode_live(chunk, self._origin))
                self._counts.sent += len(chunks) - unsent
                self._counts.dropped += unsent
            except asyncio.CancelledError:
                raise
            except Exception as error:  # best effort: dropped, never raised to producers
                self._counts.dropped += len(batch)
                log.warning("dropped %d live chunks: %r", len(batch), error)
            else:
                self._on_sent(chunks)
            self._done += len(batch)
            self._release_waiters()

    def _release_waiters(self) -> None:
        waiters = self._waiters
        while waiters and waiters[0][0] <= self._done:
            placed = waiters.popleft()[1]
            if not placed.done():  # its publisher may have given up waiting
                placed.set_result(None)
