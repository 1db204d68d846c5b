"""A response's head leaves with its body in one write, and nothing is reordered or held
past the loop's turn (ADR 0078). A real server's answers go through it in every other
HTTP test; here the transport alone, against a recording one."""

from __future__ import annotations

import asyncio
from typing import Any

from entrypoints.http.coalesced_writes import HeadHoldingTransport

HEAD = b"HTTP/1.1 201 Created\r\ncontent-length: 2\r\n\r\n"


class Recording(asyncio.Transport):
    def __init__(self) -> None:
        super().__init__()
        self.calls: list[Any] = []
        self.closing = False

    def write(self, data: bytes | bytearray | memoryview) -> None:
        self.calls.append(bytes(data))

    def close(self) -> None:
        self.calls.append("close")
        self.closing = True

    def abort(self) -> None:
        self.calls.append("abort")

    def get_write_buffer_size(self) -> int:
        self.calls.append("size")
        return 0

    def is_closing(self) -> bool:
        return self.closing


async def test_a_head_and_its_body_leave_as_one_write() -> None:
    inner = Recording()
    transport = HeadHoldingTransport(inner, asyncio.get_running_loop())
    transport.write(HEAD)
    assert inner.calls == []
    transport.write(b"{}")
    assert inner.calls == [HEAD + b"{}"]
    transport.write(b"more")
    assert inner.calls == [HEAD + b"{}", b"more"]


async def test_a_head_alone_leaves_within_the_loop_turn() -> None:
    inner = Recording()
    transport = HeadHoldingTransport(inner, asyncio.get_running_loop())
    transport.write(HEAD)  # a streamed response whose first chunk is not ready yet
    await asyncio.sleep(0)
    assert inner.calls == [HEAD]
    transport.write(b"chunk")
    assert inner.calls == [HEAD, b"chunk"]
    await asyncio.sleep(0)
    assert inner.calls == [HEAD, b"chunk"]  # the flush found nothing held: no empty write


async def test_whatever_else_is_asked_of_the_transport_sees_the_head_written_first() -> None:
    for ask, seen in ((lambda t: t.close(), "close"), (lambda t: t.abort(), "abort"),
                      (lambda t: t.get_write_buffer_size(), "size")):
        inner = Recording()
        transport = HeadHoldingTransport(inner, asyncio.get_running_loop())
        transport.write(HEAD)
        ask(transport)
        assert inner.calls == [HEAD, seen]
        await asyncio.sleep(0)
        assert inner.calls == [HEAD, seen]


async def test_a_body_that_starts_like_a_head_is_kept_in_order() -> None:
    inner = Recording()
    transport = HeadHoldingTransport(inner, asyncio.get_running_loop())
    transport.write(b"first")
    transport.write(b"HTTP/ in a body")
    transport.write(b"last")
    await asyncio.sleep(0)
    assert b"".join(inner.calls) == b"firstHTTP/ in a bodylast"
