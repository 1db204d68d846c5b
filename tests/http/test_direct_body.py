"""The event-stream body's direct writes (ADR 0079) against uvicorn's own request cycle: they
are offered only while a write would go out whole, at once and in order, and their bytes
are exactly the chunk uvicorn's `send` writes for the same body."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from litestar.types import Message, Receive, Scope, Send
from uvicorn.protocols.http.flow_control import FlowControl
from uvicorn.protocols.http.httptools_impl import RequestResponseCycle

from entrypoints.http.sse.transport import BodySlot, EventStreamTransport, body_slot

FRAME = b"id: 1\r\nevent: record\r\ndata: {}\r\n\r\n"
START = {"type": "http.response.start", "status": 200,
         "headers": [(b"content-type", b"text/event-stream")]}


class Transport(asyncio.Transport):
    def __init__(self) -> None:
        super().__init__()
        self.written = bytearray()
        self.closing = False

    def write(self, data: bytes | bytearray | memoryview) -> None:
        self.written += data

    def is_closing(self) -> bool:
        return self.closing


def cycle(transport: Transport, method: str = "GET") -> RequestResponseCycle:
    scope: Any = {"type": "http", "method": method, "path": "/", "http_version": "1.1",
                  "headers": [], "state": {}}
    log = logging.getLogger("test")
    return RequestResponseCycle(scope, transport, FlowControl(transport), log, log, False, [],
                                asyncio.Event(), False, True, lambda: None)


async def served(server: RequestResponseCycle,
                 app: Callable[[Scope, Send, BodySlot], Awaitable[None]]) -> None:
    async def asgi(scope: Scope, _receive: Receive, send: Send) -> None:
        slot = body_slot(scope)
        assert slot is not None
        await app(scope, send, slot)

    async def receive() -> Message:
        return {"type": "http.disconnect"}

    await EventStreamTransport(asgi, 5.0)(server.scope, receive, server.send)  # type: ignore[arg-type]


async def test_a_direct_write_is_the_chunk_uvicorns_send_writes() -> None:
    direct, sent = Transport(), Transport()

    async def app(_scope: Scope, send: Send, slot: BodySlot) -> None:
        assert not slot.ready()  # the response has not started
        await send(START)  # type: ignore[arg-type]
        assert slot.ready()
        slot.write(FRAME)
        await send({"type": "http.response.body", "body": b"", "more_body": False})

    await served(cycle(direct), app)
    reference = cycle(sent)
    await reference.send(START)  # type: ignore[arg-type]
    await reference.send({"type": "http.response.body", "body": FRAME, "more_body": True})
    await reference.send({"type": "http.response.body", "body": b"", "more_body": False})
    assert bytes(direct.written) == bytes(sent.written)


async def test_direct_writes_of_one_loop_turn_go_out_as_one_chunk_before_the_tasks() -> None:
    transport = Transport()
    later = b"event: live\r\ndata: {}\r\n\r\n"

    async def app(_scope: Scope, send: Send, slot: BodySlot) -> None:
        await send(START)  # type: ignore[arg-type]
        head = len(transport.written)
        slot.write(FRAME)
        slot.write(FRAME)
        assert len(transport.written) == head  # not yet: when the loop turns
        await asyncio.sleep(0)
        assert bytes(transport.written[head:]) == b"%x\r\n%s\r\n" % (2 * len(FRAME),
                                                                    FRAME + FRAME)
        slot.write(FRAME)
        await send({"type": "http.response.body", "body": later, "more_body": True})
        assert bytes(transport.written[head:]).endswith(
            b"%x\r\n%s\r\n%x\r\n%s\r\n" % (len(FRAME), FRAME, len(later), later))
        await send({"type": "http.response.body", "body": b"", "more_body": False})

    await served(cycle(transport), app)
    assert transport.written.endswith(b"0\r\n\r\n")


async def test_a_direct_write_left_when_the_response_ends_is_dropped() -> None:
    transport = Transport()
    server = cycle(transport)

    async def app(_scope: Scope, send: Send, slot: BodySlot) -> None:
        await send(START)  # type: ignore[arg-type]
        slot.write(FRAME)
        server.disconnected = True

    await served(server, app)
    await asyncio.sleep(0)
    assert FRAME not in transport.written


async def test_no_direct_write_while_the_body_holds_bytes_or_the_connection_pushes_back() -> None:
    transport = Transport()
    server = cycle(transport)

    async def app(_scope: Scope, send: Send, slot: BodySlot) -> None:
        await send(START)  # type: ignore[arg-type]
        await send({"type": "http.response.body", "body": FRAME, "more_body": True})
        assert slot.ready()  # the first frame went out at once
        await send({"type": "http.response.body", "body": FRAME, "more_body": True})
        assert not slot.ready()  # the second waits for the loop to turn, in the buffer
        await asyncio.sleep(0.01)
        assert slot.ready()
        server.flow.pause_writing()
        assert not slot.ready()
        server.flow.resume_writing()
        transport.closing = True
        assert not slot.ready()
        transport.closing = False
        server.disconnected = True
        assert not slot.ready()

    await served(server, app)


async def test_a_head_request_and_a_finished_body_take_no_direct_write() -> None:
    async def head(_scope: Scope, send: Send, slot: BodySlot) -> None:
        await send(START)  # type: ignore[arg-type]
        assert not slot.ready()

    await served(cycle(Transport(), method="HEAD"), head)

    async def finished(_scope: Scope, send: Send, slot: BodySlot) -> None:
        await send(START)  # type: ignore[arg-type]
        await send({"type": "http.response.body", "body": b"", "more_body": False})
        assert not slot.ready()

    await served(cycle(Transport()), finished)


async def test_the_direct_path_can_be_turned_off() -> None:
    seen: list[object] = []

    async def asgi(scope: Scope, _receive: Receive, send: Send) -> None:
        seen.append(body_slot(scope))
        await send(START)  # type: ignore[arg-type]
        await send({"type": "http.response.body", "body": b"", "more_body": False})

    async def receive() -> Message:
        return {"type": "http.disconnect"}

    server = cycle(Transport())
    await EventStreamTransport(asgi, 5.0, direct_writes=False)(
        server.scope, receive, server.send)  # type: ignore[arg-type]
    assert seen == [None]
