"""Frames written straight to caught-up readers' connections (ADR 0079), over a real server:
fast readers, readers that stop reading their socket for a while, and readers that hang up
and resume with Last-Event-ID all get every record once, in order, in well-formed HTTP
chunks, the same bytes for all, then the end."""

from __future__ import annotations

import asyncio
import json
import socket
from urllib.parse import urlsplit

import httpx

from tests.http.server import RunnelServer, token
from tests.http.support import create_stream

SERVER_ENV = {"RUNNEL_SSE_STALL_SECONDS": "30"}
APPENDS = 150
BATCH = 2
PAD = "x" * 2000
"""Two records of this ride along with their wake (under 6000 bytes): the direct path."""
BIG_EVERY = 15
BIG_BATCH = 10
BIG_PAD = "y" * 60_000
"""Every `BIG_EVERY`-th append is `BIG_BATCH` records too large to ride along (readers read
them from the store), 6 MB in all: the paused readers' sockets fill, the server holds back."""
RECORDS = APPENDS * BATCH + (APPENDS // BIG_EVERY) * (BIG_BATCH - BATCH)
READ_TIMEOUT = 60


class ChunkedReader:
    """One subscription over a raw socket, its chunked framing checked strictly."""

    def __init__(self, server: RunnelServer, path: str, receive_buffer: int = 0) -> None:
        self._url = urlsplit(server.api + path)
        self._receive_buffer = receive_buffer
        self.body = bytearray()
        self.ended = False
        self._reader: asyncio.StreamReader | None = None
        self._writer: asyncio.StreamWriter | None = None

    async def open(self, last_event_id: int | None = None) -> ChunkedReader:
        url = self._url
        sock = socket.socket()
        if self._receive_buffer:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, self._receive_buffer)
        sock.setblocking(False)
        await asyncio.get_running_loop().sock_connect(sock, (url.hostname, url.port))
        # A small limit: a reader that does not read stops taking bytes off its socket.
        self._reader, self._writer = await asyncio.open_connection(
            sock=sock, limit=self._receive_buffer or 2**16)
        resume = "" if last_event_id is None else f"Last-Event-ID: {last_event_id}\r\n"
        self._writer.write(f"GET {url.path} HTTP/1.1\r\nHost: {url.netloc}\r\n"
                           f"Authorization: Bearer {token()}\r\n{resume}\r\n".encode())
        head = await self._reader.readuntil(b"\r\n\r\n")
        assert head.startswith(b"HTTP/1.1 200") and b"transfer-encoding: chunked" in head, head
        return self

    async def read_until(self, records: int | None = None) -> None:
        """Take chunks until the end frame (or `records` record frames)."""
        assert self._reader is not None
        while not self.ended and (records is None or len(self.records()) < records):
            size_line = await asyncio.wait_for(self._reader.readuntil(b"\r\n"), READ_TIMEOUT)
            size = int(size_line[:-2], 16)  # no extensions, nothing but hex digits
            assert size > 0, "the body ended without an end frame"
            chunk = await asyncio.wait_for(self._reader.readexactly(size + 2), READ_TIMEOUT)
            assert chunk.endswith(b"\r\n"), chunk[-10:]
            self.body += chunk[:-2]
            self.ended = b"event: end\r\n" in self.body

    def frames(self) -> list[bytes]:
        return [bytes(frame) for frame in self.body.split(b"\r\n\r\n")[:-1]
                if not frame.startswith(b": ping")]

    def records(self) -> list[bytes]:
        return [frame for frame in self.frames() if frame.startswith(b"id: ")]

    def hang_up(self) -> None:
        """Close the connection, keeping only the frames that came whole."""
        if self._writer is not None:
            self._writer.close()
        self.body = bytearray(b"".join(frame + b"\r\n\r\n" for frame in self.frames()))


def sequences(frames: list[bytes]) -> list[int]:
    return [int(frame[4:frame.index(b"\r\n")]) for frame in frames]


def check_record_frames(frames: list[bytes]) -> None:
    for frame in frames:
        lines = frame.split(b"\r\n")
        assert lines[1] == b"event: record" and lines[2].startswith(b"data: "), frame[:80]
        envelope = json.loads(lines[2][6:])
        assert envelope["sequence"] == int(lines[0][4:])
        assert envelope["payload"]["pad"] in (PAD, BIG_PAD)


async def test_fast_paused_and_reconnecting_readers_each_get_every_record_once(
        api: httpx.AsyncClient, server: RunnelServer, run_id: str) -> None:
    await create_stream(api, run_id, credit={"max_unread_items": 100_000,
                                             "max_unread_bytes": 64 * 2**20})
    path = f"/runs/{run_id}/streams/s/subscribe"
    fast = [await ChunkedReader(server, path).open() for _ in range(6)]
    paused = [await ChunkedReader(server, path, receive_buffer=4096).open() for _ in range(3)]
    leaving = [await ChunkedReader(server, path).open() for _ in range(3)]
    fast_reading = [asyncio.create_task(reader.read_until()) for reader in fast]

    async def leave_and_come_back(reader: ChunkedReader, at: int) -> None:
        await reader.read_until(records=at)
        reader.hang_up()
        await asyncio.sleep(0.05)
        got = reader.records()
        await reader.open(last_event_id=sequences(got)[-1] if got else None)
        await reader.read_until()

    comebacks = [asyncio.create_task(leave_and_come_back(reader, at))
                 for reader, at in zip(leaving, (1, RECORDS // 3, RECORDS // 2), strict=True)]
    for n in range(APPENDS):
        big = n % BIG_EVERY == BIG_EVERY - 1
        batch = [{"payload": {"n": n, "pad": BIG_PAD if big else PAD}}
                 for _ in range(BIG_BATCH if big else BATCH)]
        response = await api.post(f"/runs/{run_id}/streams/s/records", json={"records": batch})
        assert response.status_code == 201, response.text
        if n == APPENDS // 2:
            # The paused readers took nothing so far; now they read on, while appends go on.
            paused_reading = [asyncio.create_task(reader.read_until()) for reader in paused]
    await api.post(f"/runs/{run_id}/streams/s/close")
    await asyncio.wait_for(asyncio.gather(*fast_reading, *paused_reading, *comebacks),
                           READ_TIMEOUT)

    expected = list(range(1, RECORDS + 1))
    shared = fast[0].records()
    check_record_frames(shared)
    for reader in fast + paused + leaving:
        assert sequences(reader.records()) == expected
        assert reader.records() == shared  # the same bytes for every reader
        assert reader.frames()[-1].startswith(b"event: end\r\n")
        assert json.loads(reader.frames()[-1].split(b"data: ")[1]) == {
            "reason": "closed", "last_sequence": RECORDS}
        reader.hang_up()
