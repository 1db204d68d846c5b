"""The application on a loop of its own, in a thread, and httpx transports that reach it
from any other loop (the async face) or thread (the sync face).

Rules:
- the application, its lifespan and every request task live on the thread's loop only;
  a caller's loop or thread only waits for answers (`run_coroutine_threadsafe`), so a
  test's own loop (function- or session-scoped) never hosts the node;
- a request body is read whole before it crosses (the SDK's bodies are bounded);
  a response body crosses chunk by chunk, so an event stream flows as on a socket;
- a caller that gives up (cancelled, or closes the response) closes the response on
  the application's side: the request sees its reader leave;
- once the node is closed, every request fails with `httpx.ConnectError`, as a server
  that went away would.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
from collections.abc import AsyncIterator, Coroutine, Iterator
from contextlib import AbstractAsyncContextManager, contextmanager
from typing import Any, TypeVar

import httpx

from entrypoints.testing.asgi import InProcessApp, ResponseBody

T = TypeVar("T")


class NodeClosed(httpx.ConnectError):
    """The in-memory Runnel was closed."""


class LoopThread:
    """A daemon thread running one event loop, holding a context open on it."""

    def __init__(self, name: str) -> None:
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, name=name, daemon=True)
        self._thread.start()
        self._held: AbstractAsyncContextManager[Any] | None = None
        self.closed = False

    def hold(self, context: AbstractAsyncContextManager[T]) -> T:
        """Enter `context` on the loop and keep it open until `close()`."""
        self._held = context
        return self.submit(context.__aenter__()).result()

    def submit(self, coroutine: Coroutine[Any, Any, T]) -> concurrent.futures.Future[T]:
        if self.closed:
            coroutine.close()
            raise NodeClosed("the in-memory Runnel is closed")
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop)

    def close(self) -> None:
        if self.closed:
            return
        self.closed = True  # from here on, callers get NodeClosed
        try:
            if self._held is not None:
                asyncio.run_coroutine_threadsafe(
                    self._held.__aexit__(None, None, None), self.loop).result()
        finally:
            asyncio.run_coroutine_threadsafe(_cancel_the_rest(), self.loop).result()
            self.loop.call_soon_threadsafe(self.loop.stop)
            self._thread.join()
            self.loop.close()


async def _cancel_the_rest() -> None:
    """Whatever still runs on the loop (a caller's wait that raced the close) ends now."""
    rest = [task for task in asyncio.all_tasks() if task is not asyncio.current_task()]
    for task in rest:
        task.cancel()
    await asyncio.gather(*rest, return_exceptions=True)


@contextmanager
def _cut_when_closed() -> Iterator[None]:
    """A body being read when the node closed was cut mid-way, as by a server going away."""
    try:
        yield
    except NodeClosed as closed:
        raise httpx.RemoteProtocolError("the in-memory Runnel closed mid-response") from closed


def _wire_headers(request: httpx.Request) -> list[tuple[bytes, bytes]]:
    return [(name.lower(), value) for name, value in request.headers.raw]


class AsyncFace(httpx.AsyncBaseTransport):
    """An httpx async transport to the application on `thread`, from any other loop."""

    def __init__(self, thread: LoopThread, app: InProcessApp) -> None:
        self._thread = thread
        self._app = app

    async def _across(self, coroutine: Coroutine[Any, Any, T]) -> T:
        future = self._thread.submit(coroutine)
        try:
            return await asyncio.wrap_future(future)
        except asyncio.CancelledError:
            if future.cancelled() and self._thread.closed:
                raise NodeClosed("the in-memory Runnel was closed") from None
            raise

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        content = await request.aread()
        status, headers, body = await self._across(
            self._app.request(request.method, request.url, _wire_headers(request), content))
        return httpx.Response(status, headers=headers,
                              stream=_AsyncBody(self, body), request=request)


class _AsyncBody(httpx.AsyncByteStream):
    def __init__(self, face: AsyncFace, body: ResponseBody) -> None:
        self._face = face
        self._body = body

    async def __aiter__(self) -> AsyncIterator[bytes]:
        with _cut_when_closed():
            while (chunk := await self._face._across(self._body.next_chunk())) is not None:
                yield chunk

    async def aclose(self) -> None:
        if not self._face._thread.closed:
            await self._face._across(self._body.close())


class SyncFace(httpx.BaseTransport):
    """An httpx transport to the application on `thread`, from any other thread."""

    def __init__(self, thread: LoopThread, app: InProcessApp) -> None:
        self._thread = thread
        self._app = app

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        content = request.read()
        status, headers, body = _result(self._thread.submit(
            self._app.request(request.method, request.url, _wire_headers(request), content)))
        return httpx.Response(status, headers=headers,
                              stream=_SyncBody(self._thread, body), request=request)


class _SyncBody(httpx.SyncByteStream):
    def __init__(self, thread: LoopThread, body: ResponseBody) -> None:
        self._thread = thread
        self._body = body

    def __iter__(self) -> Iterator[bytes]:
        with _cut_when_closed():
            while (chunk := _result(self._thread.submit(self._body.next_chunk()))) is not None:
                yield chunk

    def close(self) -> None:
        if not self._thread.closed:
            _result(self._thread.submit(self._body.close()))


def _result(future: concurrent.futures.Future[T]) -> T:
    try:
        return future.result()
    except concurrent.futures.CancelledError:
        raise NodeClosed("the in-memory Runnel was closed") from None
