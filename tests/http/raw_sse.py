"""A raw-socket SSE reader for tests that need to control when bytes are taken: one
that reads nothing holds the server at the socket, whatever an HTTP library buffers."""

from __future__ import annotations

import socket
from urllib.parse import urlsplit

from tests.http.server import RunnelServer, token


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


def complete_frames(stream: bytes) -> list[dict[str, str]]:
    """The fields of each complete frame (the last piece may be cut short)."""
    frames = stream.split(b"\r\n\r\n")[:-1]
    return [dict(line.decode().split(": ", 1) for line in frame.split(b"\r\n")
                 if b": " in line) for frame in frames]


def complete_record_ids(stream: bytes) -> list[int]:
    return [int(frame["id"]) for frame in complete_frames(stream)
            if frame.get("event") == "record"]


def read_response_to_its_end(sock: socket.socket) -> bytes:
    """What the server sends until it ends the (chunked) response."""
    received = bytearray()
    while not received.endswith(b"0\r\n\r\n"):
        chunk = sock.recv(65536)
        if not chunk:
            break
        received += chunk
    sock.close()
    return bytes(received)
