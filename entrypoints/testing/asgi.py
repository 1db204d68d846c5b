"""An ASGI application answering HTTP requests in this process, bodies streamed both ways.

httpx's own `ASGITransport` collects the whole response before it returns it, so an
event stream (which never ends) would never reach its reader; this one hands the
response over at `http.response.start` and its body chunk by chunk.

Rules:
- everything here runs on one event loop, the application's (`faces.py` reaches it
  from other loops and threads);
- the lifespan is the ASGI lifespan protocol, driven as a server drives it: startup
  before the first request, shutdown after the last; a failed startup raises;
- a response body is pulled: the application's `send` of a body chunk waits until the
  reader took the previous one, so a follow loop runs only as fast as its reader reads
  (the event-stream transport's stall bound applies as on a socket);
- a reader that closes a response before its end is a disconnect: `receive` answers
  `http.disconnect` (which ends an event stream), later chunks are dropped, and the
  request task is cancelled if it does not end within `DISCONNECT_GRACE_SECONDS`;
- at shutdown every request still answering is cancelled (a server going away);
- a request task that fails before it answered raises its error to the caller (a bug
  the test should see); one that fails mid-body ends the body with
  `httpx.RemoteProtocolError`, as a server whose connection dropped would.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any, cast

import httpx
from litestar.types import ASGIApp

Message = dict[str, Any]
_App = Callable[[Message, Callable[[], Awaitable[Message]], Callable[[Message], Awaitable[None]]],
                Awaitable[None]]
"""An ASGI application, its messages taken as plain dicts."""

DISCONNECT_GRACE_SECONDS = 5.0
CLIENT = ("127.0.0.1", 40000)
"""The peer address every request comes from."""

_END = object()


class ResponseBody:
    """One response's body, handed from the application's `send` to its reader."""

    def __init__(self) -> None:
        self._chunks: asyncio.Queue[object] = asyncio.Queue(maxsize=1)
        self.left = asyncio.Event()
        """Set when the reader closed the response."""
        self.complete = False
        self.task: asyncio.Future[None] | None = None

    async def put(self, chunk: bytes, more: bool) -> None:
        if self.left.is_set():
            return
        if chunk:
            await self._chunks.put(chunk)
        if not more:
            self.complete = True
            await self._chunks.put(_END)

    async def next_chunk(self) -> bytes | None:
        """The next chunk; None at the end of the body."""
        item = await self._chunks.get()
        if item is _END:
            self._chunks.put_nowait(_END)  # the end stays the end
            return None
        if isinstance(item, BaseException):
            self._chunks.put_nowait(item)
            raise item
        assert isinstance(item, bytes)
        return item

    def broken(self) -> None:
        """The request task ended without finishing the body."""
        self._drain()
        self._chunks.put_nowait(httpx.RemoteProtocolError(
            "the in-memory Runnel ended the response before its end"))

    async def close(self) -> None:
        """The reader closed the response: free a `send` waiting for room, drop the rest,
        and let the request end (cancelled after the grace)."""
        self.left.set()
        self._drain()
        if self.task is not None and not self.task.done():
            _, pending = await asyncio.wait({self.task}, timeout=DISCONNECT_GRACE_SECONDS)
            for task in pending:
                task.cancel()

    def _drain(self) -> None:
        while not self._chunks.empty():
            self._chunks.get_nowait()


class InProcessApp:
    """Serves requests to `app` on the running loop; `running()` holds its lifespan."""

    def __init__(self, app: ASGIApp) -> None:
        self._app = cast(_App, app)
        self._requests: set[asyncio.Future[None]] = set()

    @asynccontextmanager
    async def running(self) -> AsyncIterator[InProcessApp]:
        inbox: asyncio.Queue[Message] = asyncio.Queue()
        outbox: asyncio.Queue[Message] = asyncio.Queue()
        scope: Message = {"type": "lifespan", "asgi": {"version": "3.0"}, "state": {}}
        lifespan = asyncio.ensure_future(self._app(scope, inbox.get, outbox.put))
        await inbox.put({"type": "lifespan.startup"})
        await _expect(outbox, lifespan, "lifespan.startup.complete")
        try:
            yield self
        finally:
            await self._end_requests()
            await inbox.put({"type": "lifespan.shutdown"})
            await _expect(outbox, lifespan, "lifespan.shutdown.complete")
            await lifespan

    async def request(self, method: str, url: httpx.URL, headers: list[tuple[bytes, bytes]],
                      content: bytes) -> tuple[int, list[tuple[bytes, bytes]], ResponseBody]:
        """Start one request; returns once the application began its response."""
        scope: Message = {
            "type": "http", "asgi": {"version": "3.0", "spec_version": "2.3"},
            "http_version": "1.1", "method": method, "scheme": url.scheme,
            "path": url.path, "raw_path": url.raw_path.split(b"?")[0],
            "query_string": url.query, "root_path": "",
            "headers": [(name.lower(), value) for name, value in headers],
            "client": CLIENT, "server": (url.host, url.port or 80), "state": {}}
        body = ResponseBody()
        started: asyncio.Future[tuple[int, list[tuple[bytes, bytes]]]] = (
            asyncio.get_running_loop().create_future())
        request_sent = False

        async def receive() -> Message:
            nonlocal request_sent
            if not request_sent:
                request_sent = True
                return {"type": "http.request", "body": content, "more_body": False}
            await body.left.wait()
            return {"type": "http.disconnect"}

        async def send(message: Message) -> None:
            if message["type"] == "http.response.start":
                started.set_result((message["status"], list(message.get("headers", ()))))
            elif message["type"] == "http.response.body":
                await body.put(message.get("body", b""), message.get("more_body", False))

        body.task = asyncio.ensure_future(self._app(scope, receive, send))
        self._requests.add(body.task)
        body.task.add_done_callback(lambda task: self._finished(task, body, started))
        try:
            status, response_headers = await started
        except asyncio.CancelledError:
            await body.close()  # the caller gave up: nobody reads this response
            raise
        return status, response_headers, body

    def _finished(self, task: asyncio.Future[None], body: ResponseBody,
                  started: asyncio.Future[Any]) -> None:
        self._requests.discard(task)
        error = None if task.cancelled() else task.exception()
        if not started.done():
            started.set_exception(error or httpx.RemoteProtocolError(
                "the in-memory Runnel sent no response"))
        elif not body.complete and not body.left.is_set():
            body.broken()

    async def _end_requests(self) -> None:
        """At shutdown, what is still answering (event streams) is cut, as a server's
        connections are when it goes: its readers see the connection drop."""
        requests = list(self._requests)
        for task in requests:
            task.cancel()
        await asyncio.gather(*requests, return_exceptions=True)


async def _expect(outbox: asyncio.Queue[Message], lifespan: asyncio.Future[None],
                  wanted: str) -> None:
    got = asyncio.ensure_future(outbox.get())
    waits: set[asyncio.Future[Any]] = {got, lifespan}
    await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
    if not got.done():
        got.cancel()
        lifespan.result()
        raise RuntimeError(f"the application's lifespan ended before {wanted}")
    message = got.result()
    if message["type"] != wanted:
        raise RuntimeError(f"lifespan: {message.get('message') or message['type']}")
