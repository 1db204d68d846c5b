"""Fire-and-forget publishing of best-effort live chunks."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import Any, Protocol

QUEUE_LIMIT = 256
log = logging.getLogger("runnel_client.live")


class LiveSink(Protocol):
    async def publish_live(self, run_id: str, stream_id: str, chunks: list[Any],
                           source: str | None = None, attempt: int | None = None,
                           index: int | None = None) -> Any: ...


class LivePublisher:
    """`publish()` never blocks and never raises: a background task sends every chunk
    waiting in its queue (at most 256) as one request; when the queue is full a chunk
    is dropped and counted. Failed sends are counted too, never retried: live chunks
    are best effort by definition, the durable records are the answer.

    A failure is not silent: `last_error` holds the latest one, and the first failure
    of a publisher logs one warning (`runnel_client.live`); later ones only count. A
    `sink` without an async `publish_live` is refused at once (`TypeError`)."""

    def __init__(self, sink: LiveSink, run_id: str, stream_id: str, *,
                 source: str | None = None, attempt: int | None = None,
                 queue_limit: int = QUEUE_LIMIT) -> None:
        if not callable(getattr(sink, "publish_live", None)):
            raise TypeError(f"{type(sink).__name__} has no publish_live: give LivePublisher "
                            "an AsyncRunnelClient (or a stream handle's client)")
        self._sink = sink
        self._run_id = run_id
        self._stream_id = stream_id
        self._source = source
        self._attempt = attempt
        self._queue: asyncio.Queue[Any] = asyncio.Queue(maxsize=queue_limit)
        self._task: asyncio.Task[None] | None = None
        self._next_index = 0
        self.sent = 0
        self.dropped = 0
        self.failed = 0
        self.requests = 0
        self.last_error: Exception | None = None

    async def __aenter__(self) -> LivePublisher:
        self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    def start(self) -> None:
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._run())

    def publish(self, chunk: Any) -> bool:
        """Queue one chunk; False when it was dropped because the queue is full."""
        try:
            self._queue.put_nowait(chunk)
        except asyncio.QueueFull:
            self.dropped += 1
            return False
        return True

    async def aclose(self) -> None:
        """Send what is queued, then stop."""
        if self._task is None:
            return
        await self._queue.join()
        self._task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._task
        self._task = None

    async def _run(self) -> None:
        while True:
            burst = [await self._queue.get()]
            while not self._queue.empty():
                burst.append(self._queue.get_nowait())
            try:
                await self._sink.publish_live(self._run_id, self._stream_id, burst,
                                              source=self._source, attempt=self._attempt,
                                              index=self._next_index)
                self.sent += len(burst)
            except Exception as error:  # best effort: a failed burst is counted, never raised
                if self.last_error is None:
                    log.warning("live chunks to %s/%s are failing (counted, not retried): %s",
                                self._run_id, self._stream_id, error)
                self.last_error = error
                self.failed += len(burst)
            finally:
                self.requests += 1
                self._next_index += len(burst)
                for _ in burst:
                    self._queue.task_done()
