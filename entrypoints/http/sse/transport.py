"""How an event stream reaches the socket: coalesced writes, and a bound on slow readers.

This wraps the whole application because it needs the ASGI server's own `send`;
it touches `text/event-stream` responses only.

- Coalescing. The first frame after a quiet spell goes out at once, written
  from the reader's own task (a live record to thousands of readers costs no
  task per reader). Frames that follow it within the same event-loop iteration
  (a backfill page, a wake that carried several records) are buffered and go
  out as ONE write when the loop turns, or at once past `FLUSH_BYTES`. Nothing
  waits for a timer; a backfill costs about one system call per batch.
- Backpressure. A flush waits while the server's transport is full (the client
  is slow), and the next frame waits for that flush: the follow loop is pulled
  only as fast as the client takes frames, and a reader costs at most one
  buffer of `FLUSH_BYTES` plus one frame plus the socket buffers.
- Stall bound. A flush that cannot complete within the stall timeout
  disconnects the reader. Only a write that can wait is timed: uvicorn's `send`
  waits only while its flow control has writing paused, and any other server's
  `send` is always timed. It resumes with `Last-Event-ID` and loses nothing: a
  frame the client did not take was never acknowledged to it. To disconnect at
  once, rather than when the peer drains the socket, the transport is aborted
  when the server exposes it (uvicorn's protocol cycle does); otherwise the
  error makes the server close the connection as soon as it can.
- Direct writes (ADR 0079). Each event-stream request finds a `BodySlot` in its scope
  state (`body_slot`), through which a caught-up reader's frames are written straight
  to the connection from a publisher's call, without the reader's task. Only when the
  server is uvicorn's httptools protocol, the write would not wait (not write-paused,
  not closing), and the body has nothing buffered or in flight. What one loop iteration
  hands over goes out as one chunk when the loop turns, for all readers in one pass
  (`_DirectBatch`), framed exactly as that server's `send` frames a body chunk (`<size
  hex>` CRLF, the bytes, CRLF); anything the task sends after it waits for it.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Iterable

from litestar.enums import ScopeType
from litestar.types import ASGIApp, Message, Receive, Scope, Send
from uvicorn.protocols.http.httptools_impl import RequestResponseCycle

log = logging.getLogger("runnel.http.sse")

FLUSH_BYTES = 64 * 1024


class ReaderStalled(Exception):
    """The reader took no frame within the stall timeout."""


_BODY_SLOT = "runnel.sse.body"


class BodySlot:
    """Where an event-stream response's body can be written at once, once it started."""

    def __init__(self) -> None:
        self._body: _CoalescingBody | None = None

    def ready(self) -> bool:
        """Whether `write` now goes out whole, without waiting, when the loop turns (or before
        anything the task sends later, if that comes first)."""
        body = self._body
        return body is not None and body.takes_at_once()

    def bind(self, body: _CoalescingBody) -> None:
        self._body = body

    def write(self, data: bytes) -> None:
        """Only when `ready()`, and never empty (an empty chunk ends the body)."""
        assert self._body is not None and data
        self._body.write_at_once(data)


def body_slot(scope: Scope) -> BodySlot | None:
    """The request's slot for direct writes, if the transport offers them."""
    slot = scope.get("state", {}).get(_BODY_SLOT)
    return slot if isinstance(slot, BodySlot) else None


class _CoalescingBody:
    """The body side of one event-stream response."""

    def __init__(self, send: Send, stall_seconds: float, on_stall: Callable[[], None],
                 batch: _DirectBatch | None = None) -> None:
        self._send = send
        self._batch = batch
        self._direct: list[bytes] = []
        """Bytes written directly in this loop iteration, not yet on the transport."""
        self._stall_seconds = stall_seconds
        self._on_stall = on_stall
        self._buffer = bytearray()
        self._burst = False
        """A frame went out in this loop iteration: the next ones wait for its end."""
        self._flushing: asyncio.Task[None] | None = None
        self._loop = asyncio.get_running_loop()
        self._chunks = _ChunkedWrites.of(send)
        self.stalled = False

    def takes_at_once(self) -> bool:
        return (self._chunks is not None and self._batch is not None and not self._buffer
                and not self.stalled and (self._flushing is None or self._flushing.done())
                and self._chunks.ready())

    def write_at_once(self, data: bytes) -> None:
        assert self._batch is not None
        if not self._direct:
            self._batch.add(self)
        self._direct.append(data)

    def flush_direct(self) -> None:
        """Put what was written directly on the transport, unless the response is over."""
        direct, self._direct = self._direct, []
        if direct and self._chunks is not None and self._chunks.open():
            self._chunks.write(direct[0] if len(direct) == 1 else b"".join(direct))

    async def send(self, message: Message) -> None:
        self.flush_direct()
        await self._settle()
        body: bytes = message.get("body", b"")  # type: ignore[assignment]
        if not message.get("more_body", False):
            self._buffer += body
            await self._flush(more_body=False)
        elif not self._burst and not self._buffer:
            # The first frame after a quiet spell (a live record, a keepalive) goes out
            # at once, from the reader's own task: no task of its own, and no wait.
            self._burst = True
            self._loop.call_soon(self._end_burst)
            await self._write(body)
        else:
            self._buffer += body
            if len(self._buffer) >= FLUSH_BYTES:
                await self._flush()

    def _end_burst(self) -> None:
        """The loop turned: what the burst buffered goes out as one write."""
        self._burst = False
        if self._buffer and (self._flushing is None or self._flushing.done()):
            self._flushing = self._loop.create_task(self._flush())

    async def _settle(self) -> None:
        """Wait for a flush in flight (the slow-client wait) and surface its failure."""
        if self._flushing is not None:
            flushing, self._flushing = self._flushing, None
            await flushing

    async def _flush(self, more_body: bool = True) -> None:
        body, self._buffer = bytes(self._buffer), bytearray()
        await self._write(body, more_body)

    async def _write(self, body: bytes, more_body: bool = True) -> None:
        if _takes_at_once(self._send):  # nothing to bound: the write cannot wait
            await self._send({"type": "http.response.body", "body": body,
                              "more_body": more_body})
            return
        try:
            async with asyncio.timeout(self._stall_seconds):
                await self._send({"type": "http.response.body", "body": body,
                                  "more_body": more_body})
        except TimeoutError:
            self.stalled = True
            self._on_stall()
            _abort_transport(self._send)
            raise ReaderStalled(f"no frame taken for {self._stall_seconds} s") from None

    async def finish(self) -> None:
        """End of the request: nothing may outlive it."""
        self._direct = []
        if self._flushing is not None and not self._flushing.done():
            self._flushing.cancel()
        if self._flushing is not None:
            await asyncio.gather(self._flushing, return_exceptions=True)


class EventStreamTransport:
    def __init__(self, app: ASGIApp, stall_seconds: float,
                 on_stall: Callable[[], None] | None = None, direct_writes: bool = True) -> None:
        self.app = app
        self.stall_seconds = stall_seconds
        self.on_stall = on_stall or (lambda: None)
        self._batch = _DirectBatch() if direct_writes else None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != ScopeType.HTTP:
            await self.app(scope, receive, send)
            return
        body: _CoalescingBody | None = None
        slot = BodySlot()
        if self._batch is not None:
            scope.setdefault("state", {})[_BODY_SLOT] = slot

        async def wrapped_send(message: Message) -> None:
            nonlocal body
            if message["type"] == "http.response.start" and _is_event_stream(message):
                body = _CoalescingBody(send, self.stall_seconds, self.on_stall, self._batch)
                slot.bind(body)
            if body is not None and message["type"] == "http.response.body":
                await body.send(message)
            else:
                await send(message)

        try:
            await self.app(scope, receive, wrapped_send)
        except Exception:
            if body is None or not body.stalled:
                raise
        finally:
            if body is not None:
                await body.finish()
        if body is not None and body.stalled:
            log.info("disconnected a stalled SSE reader on %s", scope.get("path"))
            # Let the server observe the lost connection before the app returns, so it
            # does not report an incomplete response.
            await asyncio.sleep(0)


def _is_event_stream(message: Message) -> bool:
    headers: Iterable[tuple[bytes, bytes]] = message.get("headers", ())  # type: ignore[assignment]
    for name, value in headers:
        if name.lower() == b"content-type":
            return bool(value.split(b";")[0].strip().lower() == b"text/event-stream")
    return False


def _takes_at_once(send: Send) -> bool:
    """Whether the server's `send` will not wait: uvicorn's waits only while its flow
    control has writing paused (the client is slow); any other server may always wait."""
    flow = getattr(getattr(send, "__self__", None), "flow", None)
    return getattr(flow, "write_paused", True) is False


def _abort_transport(send: Send) -> None:
    cycle = getattr(send, "__self__", None)
    transport = getattr(cycle, "transport", None)
    abort = getattr(transport, "abort", None)
    if callable(abort):
        abort()


class _ChunkedWrites:
    """Body chunks written to uvicorn's httptools transport as its `send` writes a body
    message with `more_body` while writing is not paused: `%x\r\n`, the bytes, `\r\n`."""

    _last: tuple[bytes, bytes] = (b"", b"")
    """The last bytes framed and their chunk: the same frame goes to many readers."""

    def __init__(self, cycle: RequestResponseCycle) -> None:
        self._cycle = cycle

    @classmethod
    def of(cls, send: Send) -> _ChunkedWrites | None:
        cycle = getattr(send, "__self__", None)
        return cls(cycle) if isinstance(cycle, RequestResponseCycle) else None

    def open(self) -> bool:
        """Whether the response is under way in chunks, its connection open."""
        cycle = self._cycle
        return (cycle.response_started and not cycle.response_complete
                and not cycle.disconnected and cycle.chunked_encoding is True
                and cycle.scope["method"] != "HEAD" and not cycle.transport.is_closing())

    def ready(self) -> bool:
        """`open`, and a write goes out without waiting."""
        return not self._cycle.flow.write_paused and self.open()

    def write(self, data: bytes) -> None:
        last, chunk = _ChunkedWrites._last
        if data is not last:
            chunk = b"%x\r\n%s\r\n" % (len(data), data)
            _ChunkedWrites._last = (data, chunk)
        self._cycle.transport.write(chunk)


class _DirectBatch:
    """The bodies written to directly in this loop iteration, flushed in one pass when the
    loop turns: a reader gets one chunk per iteration however many wakes it took."""

    def __init__(self) -> None:
        self._bodies: list[_CoalescingBody] = []

    def add(self, body: _CoalescingBody) -> None:
        if not self._bodies:
            asyncio.get_running_loop().call_soon(self._flush)
        self._bodies.append(body)

    def _flush(self) -> None:
        bodies, self._bodies = self._bodies, []
        for body in bodies:
            body.flush_direct()
