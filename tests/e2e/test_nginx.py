"""The deployment kit's nginx config (`deploy/nginx/runnel.conf`) in front of two
`runnel serve` processes on one Postgres (ADR 0033).

- Event streams pass through unbuffered: a record appended reaches a follower
  through nginx while the stream stays open (a buffering proxy would hold the
  small frame until its buffer filled, far past the deadline).
- A reader that stops reading is still seen by Runnel: nginx passes the stream's
  back-pressure on instead of spooling it to disk, so Runnel's stall bound
  (`RUNNEL_SSE_STALL_SECONDS`) cuts the reader, who would resume from its cursor.
- A node stopped with SIGTERM mid-stream ends its subscription with `end
  {"reason": "shutdown"}` (ADR 0029); the follower reconnects through nginx,
  which routes it to the surviving node, while a producer keeps appending
  through nginx. The follower gets every record exactly once, in order.

Deadlines are generous; the assertions are on what arrives, never on how soon.
"""

from __future__ import annotations

import asyncio
import re
import signal
import socket
import time
from collections.abc import Iterator

import httpx
import pytest
from runnel_client import AsyncRunnelClient, FollowState, Record, RunnelError

from tests.e2e.nginx import NGINX, running_nginx
from tests.e2e.support import two_nodes
from tests.http.server import API, METRICS, RunnelServer, bearer, token

pytestmark = pytest.mark.postgres

NODE_ENV = {"RUNNEL_TRUSTED_PROXIES": "127.0.0.1", "RUNNEL_PRESTOP_SECONDS": "1",
            "RUNNEL_SHUTDOWN_GRACE_SECONDS": "3", "RUNNEL_SSE_STALL_SECONDS": "2"}
STALLED = "disconnected a stalled SSE reader"
RECORD_BYTES = 60 * 1024
BATCH = 120
"""An append of 120 records of 60 KiB (7 MiB, under the 8 MiB body ceiling)."""
ARRIVAL_DEADLINE = 10.0
"""Seconds a record may take to reach the follower: generous, and below the 15 s SSE
keepalive, so no ping can push a buffered frame out before it."""
Cluster = tuple[tuple[RunnelServer, RunnelServer], str]


@pytest.fixture
def cluster(database: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    assert NGINX.exists(), "nginx is missing: `make deploy-tools` installs it"
    with two_nodes(database, tmp_path_factory, NODE_ENV, NODE_ENV) as nodes, \
            running_nginx([node.url.removeprefix("http://") for node in nodes],
                          tmp_path_factory.mktemp("nginx")) as proxy:
        yield nodes, proxy


async def _append(client: AsyncRunnelClient, run: str, n: int) -> None:
    """Append record `n`, retrying what a node that is going away may answer, with the same
    idempotency key (so a retried append is stored once)."""
    deadline = time.monotonic() + 30
    while True:
        try:
            await client.append(run, "s", [{"payload": n, "idempotency_key": f"k{n}"}])
            return
        except (httpx.TransportError, RunnelError) as error:
            retryable = not isinstance(error, RunnelError) or error.status >= 500
            if not retryable or time.monotonic() > deadline:
                raise
            await asyncio.sleep(0.1)


async def _until(condition: object, seconds: float) -> None:
    assert callable(condition)
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, "not within the deadline"
        await asyncio.sleep(0.02)


def _open_streams(node: RunnelServer) -> float:
    metrics = httpx.get(node.url + "/metrics", headers=METRICS, timeout=5).text
    match = re.search(r'^runnel_http_connections\{pool="stream"\} (\S+)$', metrics, re.MULTILINE)
    assert match is not None, metrics
    return float(match.group(1))


def test_metrics_are_not_served_through_nginx_even_with_the_metrics_token(
        cluster: Cluster) -> None:
    nodes, proxy = cluster
    assert httpx.get(nodes[0].url + "/metrics", headers=METRICS, timeout=5).status_code == 200
    assert httpx.get(proxy + "/metrics", headers=METRICS, timeout=5).status_code == 404


async def test_a_record_reaches_a_follower_through_nginx_while_the_stream_is_open(
        cluster: Cluster, run_id: str) -> None:
    nodes, proxy = cluster
    async with AsyncRunnelClient(proxy, token()) as producer, \
            AsyncRunnelClient(proxy, token()) as reader:
        await producer.create_stream(run_id, {"stream_id": "s", "content_class": "output.text"})
        received: list[Record] = []

        async def follow() -> None:
            async for item in reader.follow(run_id, "s"):
                assert isinstance(item, Record)
                received.append(item)

        following = asyncio.create_task(follow())
        try:
            for n in range(3):  # each one only once the one before arrived: one frame at a time
                await _append(producer, run_id, n)
                await _until(lambda n=n: len(received) > n, ARRIVAL_DEADLINE)
        finally:
            following.cancel()
            await asyncio.gather(following, return_exceptions=True)
    assert [record.payload for record in received] == [0, 1, 2]

    # What tells nginx not to buffer even under a config that would: the node's own header
    # (Litestar's event-stream response sends it).
    path = f"{API}/runs/{run_id}/streams/s/subscribe"
    async with httpx.AsyncClient(headers=bearer(token()), timeout=10) as direct, \
            direct.stream("GET", nodes[0].url + path, headers={"Last-Event-ID": "3"}) as answer:
        assert answer.status_code == 200
        assert answer.headers["x-accel-buffering"] == "no"


async def test_a_reader_that_stops_reading_behind_nginx_is_cut_by_the_stall_bound(
        cluster: Cluster, run_id: str) -> None:
    nodes, proxy = cluster
    async with AsyncRunnelClient(proxy, token()) as producer:
        await producer.create_stream(run_id, {"stream_id": "s", "content_class": "output.text"})
        host, port = proxy.removeprefix("http://").rsplit(":", 1)
        reader = socket.socket()
        reader.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)  # and no autotuning
        reader.settimeout(10)
        reader.connect((host, int(port)))
        reader.sendall(f"GET {API}/runs/{run_id}/streams/s/subscribe HTTP/1.1\r\n"
                       f"Host: {host}\r\nAuthorization: Bearer {token()}\r\n"
                       "Accept: text/event-stream\r\n\r\n".encode())
        await producer.append(run_id, "s", [{"payload": "first"}])
        seen = b""
        while b"event: record" not in seen:  # the head, then the first record
            seen += reader.recv(1)
        assert seen.startswith(b"HTTP/1.1 200"), seen
        # The reader reads nothing more. More than every socket buffer on the way holds:
        payload = "x" * RECORD_BYTES
        try:
            for batch in range(8):
                await producer.append(run_id, "s", [
                    {"payload": payload, "idempotency_key": f"b{batch}-{n}"}
                    for n in range(BATCH)])
                if any(STALLED in node.log.read_text() for node in nodes):
                    break
            deadline = time.monotonic() + 30
            while not any(STALLED in node.log.read_text() for node in nodes):
                assert time.monotonic() < deadline, "Runnel never saw the reader stall"
                await asyncio.sleep(0.2)
        finally:
            reader.close()


async def test_a_follower_through_nginx_loses_and_repeats_nothing_when_its_node_stops(
        cluster: Cluster, run_id: str) -> None:
    nodes, proxy = cluster
    before, during, after = 20, 0, 20
    async with AsyncRunnelClient(proxy, token()) as producer, \
            AsyncRunnelClient(proxy, token()) as reader:
        await producer.create_stream(run_id, {"stream_id": "s", "content_class": "output.text"})
        received: list[Record] = []
        state = FollowState(0)

        async def follow() -> None:
            async for item in reader.follow(run_id, "s", state=state):
                assert isinstance(item, Record)
                received.append(item)

        following = asyncio.create_task(follow())
        try:
            for n in range(before):
                await _append(producer, run_id, n)
            await _until(lambda: len(received) == before, 30)
            victim = next(node for node in nodes if _open_streams(node) >= 1)

            # SIGTERM the follower's node mid-stream; keep appending through nginx until
            # the process is gone (pre-stop delay, drain, grace), then some more.
            victim.process.send_signal(signal.SIGTERM)
            n = before
            while victim.process.poll() is None:
                await _append(producer, run_id, n)
                n += 1
                await asyncio.sleep(0.05)
            during = n - before
            for n in range(before + during, before + during + after):
                await _append(producer, run_id, n)
            total = before + during + after
            await _until(lambda: len(received) == total, 30)
            await producer.close_stream(run_id, "s")
            await asyncio.wait_for(following, 30)  # the follow ends with the stream
        finally:
            following.cancel()
            await asyncio.gather(following, return_exceptions=True)

    # uvicorn re-raises the SIGTERM once it has shut down cleanly; systemd counts that as a
    # clean stop.
    assert victim.process.returncode in (0, -signal.SIGTERM)
    assert during > 0  # appends went on while the node was stopping
    assert [record.payload for record in received] == list(range(total))
    assert [record.sequence for record in received] == list(range(1, total + 1))
    assert state.reconnects >= 1 and state.duplicates == 0 and state.gaps == 0
    log = victim.log.read_text()
    assert "shutdown: ended 1 subscription(s)" in log, log
    assert "Traceback" not in log, log
