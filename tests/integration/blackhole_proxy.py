"""A TCP proxy in front of Postgres that can cut the network in two ways.

- `blackhole()`: the open connections stay open but nothing passes either way,
  what a half-open TCP connection looks like to the client (no error, no
  data), as after a NAT timeout or a silently dropped route;
- `refuse()` … `admit()`: new connections are closed at once, as while the
  database is unreachable;
- `hang()` … `admit()`: what a hung server looks like (stopped, or its host
  frozen): every open connection goes silent, and new ones are accepted but
  never answered;
- `pause()` … `resume()`: what a server stopped with SIGSTOP and continued looks
  like: nothing passes on any connection, old or new, until `resume()`, and
  then everything held back is delivered.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Callable
from urllib.parse import urlsplit, urlunsplit


class BlackholeProxy:
    def __init__(self, target_dsn: str) -> None:
        parts = urlsplit(target_dsn)
        self._target = (parts.hostname or "127.0.0.1", parts.port or 5432)
        self._parts = parts
        self._server: asyncio.Server | None = None
        self._links: list[asyncio.Event] = []
        self._writers: list[asyncio.StreamWriter] = []
        self._tasks: set[asyncio.Task[None]] = set()
        self._refusing = False
        self._hanging = False
        self._flowing = asyncio.Event()
        self._flowing.set()

    async def start(self) -> str:
        """Start listening; returns the DSN that goes through the proxy."""
        self._server = await asyncio.start_server(self._accept, "127.0.0.1", 0)
        port = self._server.sockets[0].getsockname()[1]
        userinfo = self._parts.netloc.rpartition("@")[0]
        netloc = f"{userinfo}@127.0.0.1:{port}" if userinfo else f"127.0.0.1:{port}"
        return urlunsplit((self._parts.scheme, netloc, self._parts.path, self._parts.query,
                           self._parts.fragment))

    def blackhole(self) -> int:
        """Stop all traffic on every connection open now; returns how many."""
        for silenced in self._links:
            silenced.set()
        count = len(self._links)
        self._links = []
        return count

    def refuse(self) -> None:
        self._refusing = True

    def hang(self) -> None:
        self._hanging = True
        self.blackhole()

    def admit(self) -> None:
        self._refusing = False
        self._hanging = False

    def pause(self) -> None:
        self._flowing.clear()

    def resume(self) -> None:
        self._flowing.set()

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()
        for task in self._tasks:
            task.cancel()
        for writer in self._writers:
            writer.close()
        await asyncio.gather(*self._tasks, return_exceptions=True)

    async def _accept(self, client_reader: asyncio.StreamReader,
                      client_writer: asyncio.StreamWriter) -> None:
        if self._refusing:
            client_writer.close()
            return
        server_reader, server_writer = await asyncio.open_connection(*self._target)
        silenced = asyncio.Event()
        if self._hanging:
            silenced.set()
        else:
            self._links.append(silenced)
        self._writers.extend((client_writer, server_writer))
        for source, sink in ((client_reader, server_writer), (server_reader, client_writer)):
            task = asyncio.create_task(self._pump(source, sink, silenced, self._flowing))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

    @staticmethod
    async def _pump(source: asyncio.StreamReader, sink: asyncio.StreamWriter,
                    silenced: asyncio.Event, flowing: asyncio.Event) -> None:
        with contextlib.suppress(ConnectionError, asyncio.CancelledError):
            while data := await source.read(65536):
                if silenced.is_set():
                    await asyncio.Event().wait()  # hold the socket open, pass nothing
                await flowing.wait()
                sink.write(data)
                await sink.drain()
        sink.close()


class ProxyThread:
    """A `BlackholeProxy` on an event loop of its own, for tests whose loop is not free to
    serve it (a server process's database, an app whose test client blocks)."""

    def __init__(self, target_dsn: str) -> None:
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._proxy = BlackholeProxy(target_dsn)

    def start(self) -> str:
        self._thread.start()
        return asyncio.run_coroutine_threadsafe(self._proxy.start(), self._loop).result(30)

    def hang(self) -> None:
        self._call(self._proxy.hang)

    def refuse(self) -> None:
        self._call(self._proxy.refuse)

    def admit(self) -> None:
        self._call(self._proxy.admit)

    def pause(self) -> None:
        self._call(self._proxy.pause)

    def resume(self) -> None:
        self._call(self._proxy.resume)

    def close(self) -> None:
        asyncio.run_coroutine_threadsafe(self._proxy.close(), self._loop).result(30)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(30)
        self._loop.close()

    def _call(self, action: Callable[[], object]) -> None:
        async def run() -> None:
            action()

        asyncio.run_coroutine_threadsafe(run(), self._loop).result(30)
