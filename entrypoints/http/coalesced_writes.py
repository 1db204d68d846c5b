"""A response's head and its body leave in one socket write (ADR 0078).

uvicorn writes a response's status line and headers as soon as the app starts the
response, and its body when the app sends it: two `send` system calls for every
answer, the one most requests get. `HeadHoldingTransport` stands between the
protocol and its transport.

Rules:
- a write that starts like a response head (`HTTP/`) is held, and goes out with the
  next write, as one; whatever the next write is, order is kept;
- a held head never waits past the current turn of the event loop: it is flushed then
  if nothing followed (a streamed response whose first chunk is not ready yet);
- anything else asked of the transport (closing, aborting, its buffer size, EOF)
  flushes the held head first, so it sees, and acts after, every byte written.
"""

from __future__ import annotations

import asyncio
from typing import Any

_HEAD = b"HTTP/"


class HeadHoldingTransport:
    """`transport`, with a response head held for the write that follows it."""

    __slots__ = ("_held", "_loop", "_transport")

    def __init__(self, transport: asyncio.Transport, loop: asyncio.AbstractEventLoop) -> None:
        self._transport = transport
        self._loop = loop
        self._held: bytes | None = None

    def write(self, data: bytes) -> None:
        held = self._held
        if held is not None:
            self._held = None
            self._transport.write(held + data)
        elif data.startswith(_HEAD):
            self._held = data
            self._loop.call_soon(self.flush)
        else:
            self._transport.write(data)

    def flush(self) -> None:
        held = self._held
        if held is not None:
            self._held = None
            self._transport.write(held)

    def is_closing(self) -> bool:
        return self._transport.is_closing()

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return self._transport.get_extra_info(name, default)

    def __getattr__(self, name: str) -> Any:
        self.flush()
        return getattr(self._transport, name)
