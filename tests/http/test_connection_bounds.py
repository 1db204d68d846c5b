"""Connections are bounded at the transport (ADR 0021), over a real `runnel serve` process.

Each test starts its own server (in-memory storage: it starts in about a second) with short
deadlines, and speaks raw HTTP/1.1 over sockets where a client library would hide what the
server does. Deadlines are short and the margins wide: a test asserts that a connection is
closed well within many times its deadline, never how soon.
"""

from __future__ import annotations

import asyncio
import json
import re
import socket
import time
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path

import httpx
import pytest

from entrypoints.http.connections import ConnectionBudget, ConnectionLimits
from entrypoints.http.problems import ClientDisconnected, problem_body
from tests.http.server import API, METRICS, RunnelServer, bearer, token

MEMORY = {"RUNNEL_STORAGE": "memory", "RUNNEL_DATABASE_URL": None}
SHORT = {**MEMORY, "RUNNEL_HEADER_TIMEOUT_SECONDS": "2", "RUNNEL_BODY_TIMEOUT_SECONDS": "1",
         "RUNNEL_MIN_BODY_BYTES_PER_SECOND": "100", "RUNNEL_KEEPALIVE_SECONDS": "0.3"}
CLOSE_MARGIN = 20.0
"""Seconds a bounded connection may take to be closed, far beyond any deadline set here."""
MiB = 1024 * 1024
Start = Callable[[Mapping[str, str | None]], RunnelServer]


@pytest.fixture
def server_with(tmp_path: Path) -> Iterator[Start]:
    started: list[RunnelServer] = []

    def start(env: Mapping[str, str | None]) -> RunnelServer:
        server = RunnelServer.start({**SHORT, **env}, tmp_path / f"server-{len(started)}")
        started.append(server)
        return server

    try:
        yield start
    finally:
        for server in started:
            server.stop()


def _address(server: RunnelServer) -> tuple[str, int]:
    host, port = server.url.removeprefix("http://").rsplit(":", 1)
    return host, int(port)


def _rss_mib(pid: int) -> float:
    status = Path(f"/proc/{pid}/status").read_text()
    match = re.search(r"^VmRSS:\s+(\d+) kB", status, re.MULTILINE)
    assert match is not None
    return int(match.group(1)) / 1024


async def _open(server: RunnelServer, source: str = "127.0.0.1"
                ) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    host, port = _address(server)
    return await asyncio.open_connection(host, port, local_addr=(source, 0))


async def _closed_within(reader: asyncio.StreamReader, seconds: float) -> bool:
    """True once the server closed (EOF or reset), False if still open after `seconds`."""
    try:
        async with asyncio.timeout(seconds):
            while await reader.read(65536):
                pass
    except TimeoutError:
        return False
    except ConnectionError:
        pass
    return True


async def _response(reader: asyncio.StreamReader) -> tuple[int, dict[str, str], bytes]:
    """One HTTP/1.1 response with a Content-Length body."""
    head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 15)
    lines = head.decode("latin-1").split("\r\n")
    status = int(lines[0].split()[1])
    headers = {name.lower(): value.strip() for name, value in
               (line.split(":", 1) for line in lines[1:] if ":" in line)}
    body = await asyncio.wait_for(reader.readexactly(int(headers.get("content-length", 0))), 15)
    return status, headers, body


async def _get(reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
               path: str = "/healthz", auth: str | None = None) -> tuple[int, bytes]:
    extra = f"Authorization: Bearer {auth}\r\n" if auth else ""
    writer.write(f"GET {path} HTTP/1.1\r\nHost: runnel\r\n{extra}\r\n".encode())
    await writer.drain()
    status, _, body = await _response(reader)
    return status, body


def _refused(status: int, body: bytes) -> bool:
    return status == 503 and json.loads(body)["code"] == "too_many_connections"


async def _stream(server: RunnelServer, run: str) -> str:
    async with httpx.AsyncClient(base_url=server.api, headers=bearer(token()), timeout=15) as api:
        created = await api.post(f"/runs/{run}/streams",
                                 json={"stream_id": "s", "content_class": "output.text"})
        assert created.status_code == 201, created.text
    return f"{API}/runs/{run}/streams/s"


def test_a_64_mib_header_leaves_memory_bounded(server_with: Start) -> None:
    server = server_with({})
    before = _rss_mib(server.process.pid)
    answer = b""
    with socket.create_connection(_address(server), timeout=15) as raw:
        try:
            raw.sendall(b"GET /healthz HTTP/1.1\r\nHost: runnel\r\nX-Big: ")
            chunk = b"a" * MiB
            for _ in range(64):
                raw.sendall(chunk)
            raw.sendall(b"\r\n\r\n")
        except (BrokenPipeError, ConnectionResetError, TimeoutError):
            pass  # the server stopped reading: what this test wants
        try:
            answer = raw.recv(65536)
        except (ConnectionResetError, TimeoutError):
            answer = b""
    grown = _rss_mib(server.process.pid) - before
    assert grown < 32, f"the server grew by {grown:.0f} MiB for one request's headers"
    assert answer == b"" or answer.startswith(b"HTTP/1.1 431"), answer[:200]
    assert httpx.get(server.url + "/healthz").status_code == 200


async def test_slowloris_sockets_are_closed_while_real_requests_are_answered(
        server_with: Start) -> None:
    server = server_with({"RUNNEL_MAX_CONNECTIONS": "1000",
                          "RUNNEL_MAX_CONNECTIONS_PER_ADDRESS": "1000"})
    sockets = [await _open(server) for _ in range(300)]
    for n, (_, writer) in enumerate(sockets):
        if n % 6:  # one in six stays silent; the others send half a request
            writer.write(b"POST /healthz HTTP/1.1\r\nHost: runnel\r\nX-Half: ")
    answered: list[int] = []

    async def real_requests() -> None:
        async with httpx.AsyncClient(timeout=10) as client:
            while True:
                answered.append((await client.get(server.url + "/healthz")).status_code)
                await asyncio.sleep(0.1)

    requests = asyncio.create_task(real_requests())
    closed = await asyncio.gather(*(_closed_within(reader, CLOSE_MARGIN)
                                    for reader, _ in sockets))
    requests.cancel()
    for _, writer in sockets:
        writer.close()
    assert all(closed), f"{closed.count(False)} of 300 half-open sockets still open"
    assert answered and set(answered) == {200}


async def test_a_body_trickled_below_the_minimum_rate_is_cut(server_with: Start) -> None:
    server = server_with({})
    path = await _stream(server, "slow-body")
    reader, writer = await _open(server)
    writer.write(f"POST {path}/records HTTP/1.1\r\nHost: runnel\r\n"
                 f"Authorization: Bearer {token()}\r\nContent-Type: application/json\r\n"
                 f"Content-Length: 100000\r\n\r\n".encode())
    await writer.drain()

    async def trickle() -> None:
        try:
            while True:
                writer.write(b" ")  # 2 bytes/s, against a minimum of 100
                await writer.drain()
                await asyncio.sleep(0.5)
        except ConnectionError:
            pass

    trickling = asyncio.create_task(trickle())
    head = b""
    try:
        async with asyncio.timeout(CLOSE_MARGIN):
            while chunk := await reader.read(65536):
                head += chunk
        cut = True
    except TimeoutError:
        cut = False
    except ConnectionError:
        cut = True
    trickling.cancel()
    writer.close()
    assert cut, "a body trickling at 2 bytes/s was still being read"
    assert head == b"" or head.startswith(b"HTTP/1.1 408"), head[:200]


async def test_an_idle_keep_alive_connection_is_closed(server_with: Start) -> None:
    server = server_with({"RUNNEL_IDLE_TIMEOUT_SECONDS": "0.5",
                          "RUNNEL_HEADER_TIMEOUT_SECONDS": "60"})
    reader, writer = await _open(server)
    assert (await _get(reader, writer))[0] == 200
    # uvicorn's own keep-alive timer is 5 s: closing well before it shows the setting holds.
    assert await _closed_within(reader, 4.0)
    writer.close()


async def test_the_per_address_and_global_caps_refuse_only_past_them(
        server_with: Start) -> None:
    server = server_with({"RUNNEL_MAX_CONNECTIONS": "5", "RUNNEL_MAX_CONNECTIONS_PER_ADDRESS": "3",
                          "RUNNEL_HEADER_TIMEOUT_SECONDS": "60",
                          "RUNNEL_IDLE_TIMEOUT_SECONDS": "60"})
    local = [await _open(server) for _ in range(3)]
    for reader, writer in local:
        assert (await _get(reader, writer))[0] == 200
    over_address = await _open(server)
    assert _refused(*await _get(*over_address))
    others = [await _open(server, "127.0.0.2") for _ in range(2)]
    for reader, writer in others:
        assert (await _get(reader, writer))[0] == 200
    over_all = await _open(server, "127.0.0.3")
    assert _refused(*await _get(*over_all))
    for reader, writer in [*local, *others]:  # the admitted ones are still served
        assert (await _get(reader, writer))[0] == 200

    local[0][1].close()
    await _closed_within(local[0][0], 5)
    for _ in range(50):  # the server sees the close soon; then the address has room again
        again = await _open(server)
        status, body = await _get(*again)
        if status == 200:
            break
        again[1].close()
        await asyncio.sleep(0.2)
    assert status == 200, body
    for _, writer in [*local, *others, over_address, over_all, again]:
        writer.close()


async def test_event_streams_outlive_the_deadlines_and_have_a_cap_of_their_own(
        server_with: Start) -> None:
    server = server_with({"RUNNEL_MAX_SSE_CONNECTIONS": "2", "RUNNEL_MAX_CONNECTIONS": "2",
                          "RUNNEL_MAX_CONNECTIONS_PER_ADDRESS": "2",
                          "RUNNEL_HEADER_TIMEOUT_SECONDS": "1", "RUNNEL_BODY_TIMEOUT_SECONDS": "1",
                          "RUNNEL_IDLE_TIMEOUT_SECONDS": "1"})
    path = await _stream(server, "streams-cap")
    streams = []
    for _ in range(2):
        reader, writer = await _open(server)
        writer.write(f"GET {path}/subscribe HTTP/1.1\r\nHost: runnel\r\n"
                     f"Authorization: Bearer {token()}\r\nLast-Event-ID: 0\r\n\r\n".encode())
        head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 15)
        assert head.startswith(b"HTTP/1.1 200"), head
        streams.append((reader, writer))

    third = await _open(server)
    assert _refused(*await _get(*third, path=f"{path}/subscribe", auth=token()))
    third[1].close()
    # The streams left the request pool: two more connections from the same address fit.
    plain = [await _open(server) for _ in range(2)]
    for reader, writer in plain:
        assert (await _get(reader, writer))[0] == 200
    for _, writer in plain:
        writer.close()

    await asyncio.sleep(4)  # four times every deadline
    for reader, _ in streams:
        assert await asyncio.wait_for(reader.read(65536), 10), "the stream was cut"
    for _, writer in streams:
        writer.close()


async def test_a_client_that_drops_mid_body_is_a_client_disconnect(
        server_with: Start) -> None:
    server = server_with({"RUNNEL_BODY_TIMEOUT_SECONDS": "60"})
    path = await _stream(server, "drop-mid-body")
    _, writer = await _open(server)
    writer.write(f"POST {path}/records HTTP/1.1\r\nHost: runnel\r\n"
                 f"Authorization: Bearer {token()}\r\nContent-Type: application/json\r\n"
                 f"Content-Length: 5000\r\n\r\n".encode() + b'{"records": [' + b" " * 100)
    await writer.drain()
    await asyncio.sleep(0.5)  # the handler is reading the body
    writer.close()

    async with httpx.AsyncClient(timeout=10) as client:
        deadline = time.monotonic() + CLOSE_MARGIN
        while time.monotonic() < deadline:
            metrics = (await client.get(server.url + "/metrics", headers=METRICS)).text
            if 'status="499"' in metrics or 'status="500"' in metrics:
                break  # the answer is timed once the handler gave up
            await asyncio.sleep(0.2)
    assert 'status="500"' not in metrics
    assert "runnel_http_client_disconnects_total 1.0" in metrics
    timed = [line for line in metrics.splitlines()
             if line.startswith("runnel_http_request_duration_seconds_count")
             and '/records",' in line]
    assert timed and all('status="499"' in line for line in timed), timed
    log = server.log.read_text()
    assert "Traceback" not in log and "ERROR" not in log, log


def test_the_client_disconnect_problem_is_499_and_not_an_error() -> None:
    body = problem_body(ClientDisconnected("gone"))
    assert (body["status"], body["code"], body["title"]) == (
        499, "client_disconnected", "Client Closed Request")


def test_a_stream_leaves_the_request_pool_and_comes_back() -> None:
    budget = ConnectionBudget(ConnectionLimits(
        max_connections=2, max_per_address=1, max_streams=1, max_head_bytes=1024,
        header_timeout=1, body_timeout=1, min_body_rate=1, idle_timeout=1))
    assert budget.admit("a") and not budget.admit("a") and budget.admit("b")
    assert not budget.admit("c")  # the global cap
    assert budget.enter_stream("a") and budget.admit("a")  # "a" has room again
    assert not budget.enter_stream("b")  # one stream at most
    budget.release("a", "request")
    budget.leave_stream("a")
    assert (budget.requests, budget.streams) == (2, 0)
    assert dict(budget.refused) == {"address": 1, "connections": 1, "streams": 1}


async def test_a_kept_alive_connection_subscribes_again_at_once(server_with: Start) -> None:
    """A connection's next subscription may start before its last one has unwound: on a
    kept-alive or pipelined connection it is the same slot, never a refusal."""
    server = server_with({})
    path = await _stream(server, "subscribe-again")
    async with httpx.AsyncClient(base_url=server.url, headers=bearer(token()), timeout=15) as api:
        closed = await api.post(f"{path}/close")
        assert closed.status_code == 200, closed.text
    reader, writer = await _open(server)
    subscribe = (f"GET {path}/subscribe HTTP/1.1\r\nHost: runnel\r\n"
                 f"Authorization: Bearer {token()}\r\nLast-Event-ID: 0\r\n\r\n").encode()
    for burst in (1, 3, 1, 3):  # one after the other, then pipelined
        writer.write(subscribe * burst)
        for _ in range(burst):
            head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 15)
            assert head.startswith(b"HTTP/1.1 200"), head
            assert b"closed" in await asyncio.wait_for(reader.readuntil(b"0\r\n\r\n"), 15)
    writer.close()
    async with httpx.AsyncClient(timeout=10) as client:
        deadline = time.monotonic() + CLOSE_MARGIN  # the last subscription may still unwind
        while time.monotonic() < deadline:
            metrics = (await client.get(server.url + "/metrics", headers=METRICS)).text
            if 'runnel_http_connections{pool="stream"} 0.0' in metrics:
                break
            await asyncio.sleep(0.1)
    assert 'runnel_http_connections_refused_total{cap="streams"} 0.0' in metrics
    assert 'runnel_http_connections{pool="stream"} 0.0' in metrics
