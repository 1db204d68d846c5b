"""A record's SSE frame is the same bytes for every reader of its stream, whoever they are,
and never anyone else's (ADR 0048): two principals get identical frames, another tenant's
stream under the same ids gets its own, redaction is in every frame and live chunk, and a
reader that resumes gets the very bytes it would have had."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from urllib.parse import urlsplit

import httpx

from tests.http.raw_sse import complete_frames
from tests.http.server import RunnelServer, bearer, token
from tests.http.support import create_stream

MASK = {"mask": ["/user/email"]}


class RawReader:
    """One subscription read as raw bytes (chunked framing removed), until a condition."""

    def __init__(self, server: RunnelServer, path: str, auth: str,
                 headers: dict[str, str] | None = None) -> None:
        self._url = urlsplit(server.api + path)
        self._auth = auth
        self._headers = headers or {}
        self.body = b""
        self._reader: asyncio.StreamReader | None = None
        self._writer: asyncio.StreamWriter | None = None

    async def open(self) -> RawReader:
        url = self._url
        self._reader, self._writer = await asyncio.open_connection(url.hostname, url.port)
        extra = "".join(f"{name}: {value}\r\n" for name, value in self._headers.items())
        target = url.path + (f"?{url.query}" if url.query else "")
        self._writer.write(f"GET {target} HTTP/1.1\r\nHost: {url.netloc}\r\n"
                           f"Authorization: Bearer {self._auth}\r\n{extra}\r\n".encode())
        head = await self._reader.readuntil(b"\r\n\r\n")
        assert head.startswith(b"HTTP/1.1 200"), head
        return self

    async def until(self, done: Callable[[list[bytes]], bool]) -> list[bytes]:
        """The frames received (each with its blank line) once `done` holds of them."""
        assert self._reader is not None
        while not done(self.frames()):
            size = int((await self._reader.readuntil(b"\r\n")).split(b";")[0], 16)
            assert size, "the stream ended early"
            self.body += (await asyncio.wait_for(self._reader.readexactly(size + 2), 30))[:-2]
        return self.frames()

    def frames(self) -> list[bytes]:
        return [frame + b"\r\n\r\n" for frame in self.body.split(b"\r\n\r\n")[:-1]
                if not frame.startswith(b": ping")]

    def close(self) -> None:
        if self._writer is not None:
            self._writer.close()


def records(n: int) -> Callable[[list[bytes]], bool]:
    return lambda frames: sum(frame.startswith(b"id: ") for frame in frames) >= n


def record_frames(frames: list[bytes]) -> list[bytes]:
    return [frame for frame in frames if frame.startswith(b"id: ")]


async def test_two_principals_get_the_same_bytes_and_another_tenant_its_own(
        api: httpx.AsyncClient, server: RunnelServer, run_id: str) -> None:
    path = f"/runs/{run_id}/streams/s/subscribe"
    await create_stream(api, run_id, redaction=MASK)
    other = httpx.AsyncClient(base_url=server.api, headers=bearer(token(tenant="t2")))
    async with other:
        await create_stream(other, run_id, redaction=MASK)
        alice = await RawReader(server, path, token(sub="alice")).open()
        bob = await RawReader(server, path, token(sub="bob")).open()
        stranger = await RawReader(server, path, token(tenant="t2", sub="eve")).open()
        try:
            ours = [{"user": {"email": "a@example.com", "name": "ours"}, "n": n}
                    for n in range(3)]
            theirs = [{"user": {"email": "t2@example.com", "name": "theirs"}, "n": n}
                      for n in range(3)]
            for body in ours:
                response = await api.post(f"/runs/{run_id}/streams/s/records",
                                          json={"records": [{"payload": body}]})
                assert response.status_code == 201, response.text
            response = await other.post(f"/runs/{run_id}/streams/s/records",
                                        json={"records": [{"payload": b} for b in theirs]})
            assert response.status_code == 201, response.text
            seen_by_alice = record_frames(await alice.until(records(3)))
            seen_by_bob = record_frames(await bob.until(records(3)))
            seen_by_stranger = record_frames(await stranger.until(records(3)))
        finally:
            for reader in (alice, bob, stranger):
                reader.close()
    assert seen_by_alice == seen_by_bob
    assert len(seen_by_alice) == 3
    assert all(b'"name":"ours"' in frame for frame in seen_by_alice)
    assert all(b'"name":"theirs"' in frame for frame in seen_by_stranger)
    assert not any(b"theirs" in frame for frame in seen_by_alice)
    assert not any(b'"ours"' in frame for frame in seen_by_stranger)
    # Redaction is in the frames: the pinned path never leaves the server.
    assert not any(b"@example.com" in frame for frame in seen_by_alice + seen_by_stranger)
    # The frame's JSON is the records page's, byte for byte.
    page = (await api.get(f"/runs/{run_id}/streams/s/records")).content
    for frame in seen_by_alice:
        data = frame.split(b"data: ", 1)[1].removesuffix(b"\r\n\r\n")
        assert data in page


async def test_live_chunks_are_redacted_for_every_reader(
        api: httpx.AsyncClient, server: RunnelServer, run_id: str) -> None:
    path = f"/runs/{run_id}/streams/s/subscribe?live=true"
    await create_stream(api, run_id, redaction=MASK)
    readers = [await RawReader(server, path, token(sub=sub)).open() for sub in ("alice", "bob")]
    try:
        chunk = {"user": {"email": "a@example.com", "name": "A"}}
        # A chunk with no reader is dropped: publish until both readers have one.
        seen: list[list[bytes]] = []
        for reader in readers:
            frames: list[bytes] = []
            for _ in range(50):
                response = await api.post(f"/runs/{run_id}/streams/s/live",
                                          json={"chunks": [chunk]})
                assert response.status_code == 202, response.text
                try:
                    frames = await asyncio.wait_for(reader.until(
                        lambda got: any(f.startswith(b"event: live") for f in got)), 0.5)
                    break
                except TimeoutError:
                    continue
            seen.append([frame for frame in frames if frame.startswith(b"event: live")])
    finally:
        for reader in readers:
            reader.close()
    for frames in seen:
        assert frames
        assert all(b'"name":"A"' in frame and b"@example.com" not in frame for frame in frames)


async def test_a_reader_that_resumes_gets_the_bytes_it_would_have_had(
        api: httpx.AsyncClient, server: RunnelServer, run_id: str) -> None:
    path = f"/runs/{run_id}/streams/s/subscribe"
    await create_stream(api, run_id)
    response = await api.post(f"/runs/{run_id}/streams/s/records", json={"records": [
        {"payload": {"n": n, "text": "é✓"}} for n in range(5)]})
    assert response.status_code == 201, response.text
    first = await RawReader(server, path, token(sub="alice")).open()
    try:
        whole = record_frames(await first.until(records(5)))
    finally:
        first.close()
    resumed = await RawReader(server, path, token(sub="bob"), {"Last-Event-ID": "2"}).open()
    try:
        rest = record_frames(await resumed.until(records(3)))
    finally:
        resumed.close()
    assert [frame["id"] for frame in complete_frames(b"".join(rest))] == ["3", "4", "5"]
    assert rest == whole[2:]
