"""`Producer`: an idempotent, batching, retrying writer of one stream (async).

Rules:
- every record gets an idempotency key `<key_prefix>:<n>` (`runnel_client.batching`):
  a producer restarted with the same prefix that writes the same records stores
  none of them twice;
- a record waits at most `linger_seconds` before it is sent, with the others
  written meanwhile, in one append of at most 1000 records and `max_batch_bytes`
  (and within the stream's unread ceilings when it declares consumers);
- batches are sent one at a time, in write order; a failed one is retried under
  `RetryPolicy` (429 after its `Retry-After`, 5xx, transport errors) with the same
  keys, so a retry stores each record once;
- when it gives up, the producer raises `AppendFailed` from the `write`, `flush` or
  `close` that comes next (a linger flush has no caller to raise to) and refuses
  every later write: nothing written after a lost record is stored before it;
- `close()` and leaving `async with` send everything written; `write()` returns
  before the record is stored (it waits only while a full batch, or the batch before
  its own, is being sent), `flush()` when everything written so far is.
"""

from __future__ import annotations

import asyncio
import base64
from collections import deque
from collections.abc import AsyncIterable, AsyncIterator, Callable, Iterable
from typing import Any, Protocol

from runnel_client.batching import DEFAULT_BATCH_BYTES, Batch, BatchLimits, KeyCounter, check_inline
from runnel_client.errors import AppendFailed, RunnelError
from runnel_client.live import LivePublisher, LiveSink
from runnel_client.retrying import RetryPolicy


def joined(chunks: list[Any]) -> Any:
    """A step's record payload from its chunks: the text when every chunk is a string,
    otherwise the list of chunks."""
    return "".join(chunks) if all(isinstance(chunk, str) for chunk in chunks) else list(chunks)


class ProducerClient(LiveSink, Protocol):
    """What a `Producer` uses of its client (an `AsyncRunnelClient`)."""

    async def get_stream(self, run_id: str, stream_id: str) -> dict[str, Any]: ...

    async def append(self, run_id: str, stream_id: str, records: list[dict[str, Any]], *,
                     backpressure_retries: int | None = None) -> dict[str, Any]: ...


class Producer:
    def __init__(self, client: ProducerClient, run_id: str, stream_id: str, *,
                 key_prefix: str, start: int = 0, linger_seconds: float = 0.02,
                 max_batch_bytes: int = DEFAULT_BATCH_BYTES,
                 retry: RetryPolicy | None = None) -> None:
        if linger_seconds < 0:
            raise ValueError("linger_seconds must be ≥ 0")
        self._client = client
        self._run_id = run_id
        self._stream_id = stream_id
        self._keys = KeyCounter(key_prefix, start)
        self._linger = linger_seconds
        self._max_batch_bytes = max_batch_bytes
        self._retry = retry or RetryPolicy()
        self._limits: BatchLimits | None = None
        self._batches: deque[Batch] = deque()
        self._lock = asyncio.Lock()
        self._timer: asyncio.Task[None] | None = None
        self._failed: AppendFailed | None = None
        self._closed = False
        self.stored = 0
        """Records the server answered for (stored now, or before under the same key)."""
        self.head = 0
        """The stream's head in the last append answer."""
        self.retries = 0

    @property
    def next_key(self) -> str:
        """The key the next record will get."""
        return f"{self._keys.prefix}:{self._keys.next}"

    async def __aenter__(self) -> Producer:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def write(self, payload: Any, *, content_type: str | None = None) -> str:
        """Queue one JSON record and return its idempotency key. Raises `RunnelError`
        413 `too_large` at once for a payload above 64 KiB (send it with
        `upload_object`), and `AppendFailed` once the producer gave up."""
        record: dict[str, Any] = {"payload": payload}
        if content_type is not None:
            record["content_type"] = content_type
        return await self._queue(record)

    async def write_data(self, data: bytes,
                         content_type: str = "application/octet-stream") -> str:
        """Queue one binary record (sent as base64 `data`); as `write`."""
        return await self._queue({"data": base64.b64encode(data).decode(),
                                  "content_type": content_type})

    async def pipe(self, chunks: AsyncIterable[Any] | Iterable[Any], *, live: bool = True,
                   every: int | None = None, attempt: int = 1,
                   to_payload: Callable[[list[Any]], Any] = joined) -> list[str]:
        """Turn a stream of chunks (an LLM's tokens) into both layers (ADR 0019): each
        chunk goes out at once as a best-effort live chunk (with `live=True`), and each
        step, the whole stream or every `every` chunks, becomes one durable record,
        `to_payload(chunks)` (the text, by default). A step's live chunks carry
        `source` = its record's idempotency key, so a reader drops its preview when
        the record arrives. Returns the steps' keys once every record is stored; raises
        as `flush`. Live chunks are never retried (`LivePublisher`)."""
        if every is not None and every < 1:
            raise ValueError("every must be ≥ 1")
        keys: list[str] = []
        step: list[Any] = []
        key = self._keys.take()
        publisher = self._publisher(key, attempt, live)
        async for chunk in _each(chunks):
            if publisher is not None:
                publisher.publish(chunk)
            step.append(chunk)
            if every is not None and len(step) >= every:
                await self._end_step(publisher, key, to_payload(step))
                keys.append(key)
                step, key = [], self._keys.take()
                publisher = self._publisher(key, attempt, live)
        if step or not keys:
            await self._end_step(publisher, key, to_payload(step))
            keys.append(key)
        elif publisher is not None:
            await publisher.aclose()
        await self.flush()
        return keys

    async def flush(self) -> None:
        """Send everything written so far; returns once it is stored. Raises
        `AppendFailed` when the producer gave up."""
        self._cancel_timer()
        async with self._lock:
            await self._send_waiting(everything=True)
        if self._failed is not None:
            raise self._failed

    async def close(self) -> None:
        """Flush, then refuse further writes. Raises as `flush`."""
        try:
            await self.flush()
        finally:
            self._closed = True

    def _publisher(self, key: str, attempt: int, live: bool) -> LivePublisher | None:
        if not live:
            return None
        publisher = LivePublisher(self._client, self._run_id, self._stream_id, source=key,
                                  attempt=attempt)
        publisher.start()
        return publisher

    async def _end_step(self, publisher: LivePublisher | None, key: str, payload: Any) -> None:
        if publisher is not None:
            await publisher.aclose()
        await self._queue({"payload": payload, "idempotency_key": key}, keyed=True)

    async def _queue(self, record: dict[str, Any], keyed: bool = False) -> str:
        if self._closed:
            raise RuntimeError("the producer is closed")
        if self._failed is not None:
            raise self._failed
        check_inline(record)
        if not keyed:
            record["idempotency_key"] = self._keys.take()
        limits = await self._stream_limits()
        if not self._batches or not self._batches[-1].fits(record):
            self._batches.append(Batch(limits))
        self._batches[-1].add(record)
        if len(self._batches) > 1 or self._batches[-1].full or self._linger == 0:
            self._cancel_timer()
            async with self._lock:
                await self._send_waiting(everything=self._linger == 0)
            if self._failed is not None:
                raise self._failed
        if self._batches and self._timer is None and self._linger > 0:
            self._timer = asyncio.get_running_loop().create_task(self._linger_then_send())
        return str(record["idempotency_key"])

    async def _stream_limits(self) -> BatchLimits:
        if self._limits is None:
            info = await self._client.get_stream(self._run_id, self._stream_id)
            self._limits = BatchLimits.for_stream(info.get("definition", {}),
                                                  self._max_batch_bytes)
        return self._limits

    async def _linger_then_send(self) -> None:
        await asyncio.sleep(self._linger)
        self._timer = None
        async with self._lock:
            await self._send_waiting(everything=True)

    def _cancel_timer(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    async def _send_waiting(self, everything: bool) -> None:
        """Send the sealed batches (all of them with `everything`), oldest first. Called
        under the lock; a failure is kept in `_failed`, the batches stay unsent."""
        while self._failed is None and self._batches and (
                everything or len(self._batches) > 1 or self._batches[0].full):
            batch = self._batches[0]
            batch.sealed = True  # a write while it is in flight opens the next batch
            try:
                await self._send(batch.records)
            except AppendFailed as failed:
                self._failed = failed
                return
            self._batches.popleft()

    async def _send(self, records: list[dict[str, Any]]) -> None:
        for attempt in range(1, self._retry.max_attempts + 1):
            try:
                answer = await self._client.append(self._run_id, self._stream_id, records,
                                                   backpressure_retries=0)
            except Exception as error:
                if isinstance(error, RunnelError) and not self._retry.retryable(error):
                    raise AppendFailed(error, attempt, list(records)) from error
                if not self._retry.retryable(error):
                    raise
                if attempt == self._retry.max_attempts:
                    raise AppendFailed(error, attempt, list(records)) from error
                self.retries += 1
                await asyncio.sleep(self._retry.delay(attempt, error))
                continue
            self.stored += len(records)
            self.head = int(answer.get("head", self.head))
            return


async def _each(chunks: AsyncIterable[Any] | Iterable[Any]) -> AsyncIterator[Any]:
    if isinstance(chunks, AsyncIterable):
        async for chunk in chunks:
            yield chunk
    else:
        for chunk in chunks:
            yield chunk

