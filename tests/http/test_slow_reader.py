"""A reader that stops taking frames is disconnected after the stall timeout, and resumes
with Last-Event-ID losing and repeating nothing (SPEC §4: durable streams never drop a frame;
the server waits, with bounded memory, then lets go)."""

from __future__ import annotations

import socket
from urllib.parse import urlsplit

import httpx

from tests.http.server import RunnelServer, token
from tests.http.support import (
    create_stream,
    has_event,
    metric,
    read_events,
    records_of,
    wait_for_metric,
)

SERVER_ENV = {"RUNNEL_SSE_STALL_SECONDS": "2"}
RECORDS = 200
BATCH = 10
PAYLOAD = "x" * 60_000
"""12 MB in all: far more than the socket buffers of both ends hold, so the server blocks."""


def open_stalled_reader(server: RunnelServer, path: str) -> socket.socket:
    """A client that sends the request, reads the response headers, then reads nothing."""
    url = urlsplit(server.api + path)
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sock.settimeout(30)
    sock.connect((url.hostname, url.port))
    sock.sendall(f"GET {url.path} HTTP/1.1\r\nHost: {url.netloc}\r\n"
                 f"Authorization: Bearer {token()}\r\nAccept: text/event-stream\r\n\r\n"
                 .encode())
    head = b""
    while b"\r\n\r\n" not in head:
        head += sock.recv(1)
    assert head.startswith(b"HTTP/1.1 200"), head
    return sock


def drain(sock: socket.socket) -> bytes:
    """Everything the client can still read; the connection ends with EOF or a reset."""
    received = bytearray()
    try:
        while chunk := sock.recv(65536):
            received += chunk
    except ConnectionResetError:
        pass
    finally:
        sock.close()
    return bytes(received)


def dechunk(body: bytes) -> bytes:
    """HTTP/1.1 chunked transfer decoding, stopping at the first incomplete chunk."""
    data = bytearray()
    while b"\r\n" in body:
        size_line, _, rest = body.partition(b"\r\n")
        size = int(size_line, 16)
        if size == 0 or len(rest) < size + 2:
            break
        data += rest[:size]
        body = rest[size + 2:]
    return bytes(data)


def complete_record_ids(stream: bytes) -> list[int]:
    frames = stream.split(b"\r\n\r\n")[:-1]  # the last piece is an incomplete frame
    ids = []
    for frame in frames:
        fields = dict(line.split(b": ", 1) for line in frame.split(b"\r\n") if b": " in line)
        if fields.get(b"event") == b"record":
            ids.append(int(fields[b"id"]))
    return ids


async def test_a_stalled_reader_is_disconnected_and_resumes_losing_nothing(
        api: httpx.AsyncClient, server: RunnelServer, run_id: str) -> None:
    await create_stream(api, run_id, credit={"max_unread_bytes": 64 * 1024 * 1024})
    path = f"/runs/{run_id}/streams/s/subscribe"
    stalled_before = await metric(server.url, "runnel_sse_stalled_disconnects_total")
    sock = open_stalled_reader(server, path)
    for first in range(1, RECORDS + 1, BATCH):
        response = await api.post(f"/runs/{run_id}/streams/s/records", json={"records": [
            {"payload": {"n": n, "pad": PAYLOAD}} for n in range(first, first + BATCH)]})
        assert response.status_code == 201, response.text
    await api.post(f"/runs/{run_id}/streams/s/close")

    # The server gives up on the reader while it still reads nothing...
    await wait_for_metric(server.url, "runnel_sse_stalled_disconnects_total",
                          lambda value: value == stalled_before + 1)
    await wait_for_metric(server.url, "runnel_sse_readers", lambda value: value == 0)
    # ...so what the reader can still read is cut short of the end.
    before_cut = complete_record_ids(dechunk(drain(sock)))
    assert before_cut == list(range(1, len(before_cut) + 1))
    assert len(before_cut) < RECORDS

    resumed = await read_events(api, path, until=has_event("end"),
                                headers={"Last-Event-ID": str(before_cut[-1] if before_cut
                                                              else 0)})
    assert before_cut + records_of(resumed) == list(range(1, RECORDS + 1))
