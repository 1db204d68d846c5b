"""`runnel serve --processes N` (ADR 0045): N processes on one port, each a node of its own.

A reader on any process sees every append made through any other, in order, once; the
test proves that both processes served (it finds which child holds each connection) rather
than trusting the kernel to spread them. A `kill -9` of `runnel serve` leaves nothing
serving on the port.
"""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
import time
from pathlib import Path
from urllib.parse import urlsplit

import httpx
import psutil

from tests.http.server import RunnelServer, bearer, token
from tests.http.support import GUARD_SECONDS
from tests.pg import pg_dsn, pg_template  # noqa: F401  (fixtures)

RUN, STREAM, APPENDS = "run-p", "s", 24
RECORD_ID = re.compile(rb"id: (\d+)\r?\nevent: record\r?\n")


def serving_children(server: RunnelServer) -> list[psutil.Process]:
    parent = psutil.Process(server.process.pid)
    deadline = time.monotonic() + GUARD_SECONDS
    while time.monotonic() < deadline:
        children = [child for child in parent.children()
                    if "spawn_main" in " ".join(child.cmdline())]
        if len(children) == 2:
            return children
        time.sleep(0.1)
    raise AssertionError("runnel serve did not start two serving processes")


def owner(children: list[psutil.Process], server_port: int, client_port: int) -> int:
    """Which child holds the server side of the connection from `client_port`."""
    for index, child in enumerate(children):
        for connection in child.net_connections(kind="tcp"):
            if (connection.laddr and connection.laddr.port == server_port and connection.raddr
                    and connection.raddr.port == client_port):
                return index
    raise AssertionError(f"no serving process holds the connection from port {client_port}")


def connect(server: RunnelServer) -> socket.socket:
    url = urlsplit(server.url)
    sock = socket.create_connection((url.hostname or "127.0.0.1", url.port or 80), timeout=30)
    return sock


def subscribe(server: RunnelServer) -> socket.socket:
    sock = connect(server)
    sock.sendall((f"GET /api/workflow-streams/runs/{RUN}/streams/{STREAM}/subscribe HTTP/1.1\r\n"
                  f"Host: t\r\nAuthorization: Bearer {token()}\r\n"
                  "Accept: text/event-stream\r\n\r\n").encode())
    return sock


def append_one(server: RunnelServer, index: int) -> socket.socket:
    body = json.dumps({"records": [{"payload": {"n": index}}]}).encode()
    sock = connect(server)
    sock.sendall((f"POST /api/workflow-streams/runs/{RUN}/streams/{STREAM}/records HTTP/1.1\r\n"
                  f"Host: t\r\nAuthorization: Bearer {token()}\r\n"
                  f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
                  ).encode() + body)
    return sock


def record_ids(sock: socket.socket, count: int) -> list[int]:
    """The `id:` of the first `count` record frames the subscriber receives (the body is
    chunked on the wire, so the whole of it is searched again as it grows)."""
    received = b""
    ids: list[int] = []
    while len(ids) < count:
        chunk = sock.recv(65536)
        assert chunk, f"the subscription ended after {ids}"
        received += chunk
        ids = [int(seq) for seq in RECORD_ID.findall(received)]
    sock.close()
    return ids[:count]


def test_a_reader_on_any_process_sees_every_append_made_through_any_other(
        pg_dsn: str, tmp_path: Path) -> None:  # noqa: F811
    server = RunnelServer.start({"RUNNEL_DATABASE_URL": pg_dsn, "RUNNEL_PROCESSES": "2"},
                                tmp_path)
    try:
        children = serving_children(server)
        port = urlsplit(server.url).port or 80
        created = httpx.post(f"{server.api}/runs/{RUN}/streams", headers=bearer(token()),
                             json={"stream_id": STREAM, "content_class": "output.text"})
        assert created.status_code == 201, created.text
        readers: list[tuple[socket.socket, int]] = []
        while len({process for _, process in readers}) < 2 or len(readers) < 4:
            assert len(readers) < 64, "every subscriber landed on one process"
            sock = subscribe(server)
            time.sleep(0.05)  # accepted by then
            readers.append((sock, owner(children, port, sock.getsockname()[1])))
        writers: set[int] = set()
        for index in range(APPENDS):
            sock = append_one(server, index)
            time.sleep(0.02)
            writers.add(owner(children, port, sock.getsockname()[1]))
            answer = sock.recv(65536)
            assert answer.startswith(b"HTTP/1.1 201"), answer[:200]
            sock.close()
        assert writers == {0, 1}, f"every append went through process {writers}"
        for sock, _ in readers:
            assert record_ids(sock, APPENDS) == list(range(1, APPENDS + 1))
    finally:
        server.stop()


def test_kill_9_of_runnel_serve_leaves_nothing_serving(pg_dsn: str,  # noqa: F811
                                                      tmp_path: Path) -> None:
    server = RunnelServer.start({"RUNNEL_DATABASE_URL": pg_dsn, "RUNNEL_PROCESSES": "2"},
                                tmp_path)
    children = serving_children(server)
    server.process.kill()
    server.process.wait()
    _, alive = psutil.wait_procs(children, timeout=GUARD_SECONDS)
    assert not alive, alive
    url = urlsplit(server.url)
    try:
        socket.create_connection((url.hostname or "127.0.0.1", url.port or 80), timeout=5)
    except ConnectionRefusedError:
        return
    raise AssertionError("the port still accepts connections after kill -9")


def test_more_than_one_process_is_refused_where_state_lives_in_the_process(
        tmp_path: Path) -> None:
    """Memory storage and the embedded default keep their state in one process: asking for
    two is one line and exit 2, before anything boots; so is a count below one."""
    cases = [({"RUNNEL_STORAGE": "memory"}, ["--processes", "2"],
              "RUNNEL_PROCESSES > 1 needs RUNNEL_DATABASE_URL"),
             ({"RUNNEL_STORAGE": None, "RUNNEL_DATABASE_URL": None, "RUNNEL_PROCESSES": "3"}, [],
              "RUNNEL_PROCESSES > 1 needs RUNNEL_DATABASE_URL"),
             ({"RUNNEL_STORAGE": "memory"}, ["--processes", "0"], "not a positive whole number")]
    for env, flags, said in cases:
        merged = {**os.environ, "RUNNEL_DATA_DIR": str(tmp_path), **env}
        environment = {key: value for key, value in merged.items() if value is not None}
        result = subprocess.run([sys.executable, "-m", "entrypoints.commands", "serve",
                                 "--port", "0", *flags], env=environment, capture_output=True,
                                text=True, timeout=GUARD_SECONDS)
        assert result.returncode == 2, (env, flags, result.stderr)
        assert said in result.stderr, result.stderr
    assert not (tmp_path / "pgdata").exists()  # the embedded Postgres never booted
