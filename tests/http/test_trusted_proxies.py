"""Trusted proxies (ADR 0033), over a real `runnel serve` process: a connection from a
trusted proxy is held to the global cap only, and its `X-Forwarded-For` names the client;
from any other peer the header changes nothing, so a client cannot choose its address.

The server listens on 127.0.0.1; connections are opened from 127.0.0.2 (the "proxy")
and 127.0.0.1 (a client that reaches the node directly).
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Iterator, Mapping
from pathlib import Path

import pytest

from entrypoints.composition.settings import Settings
from entrypoints.http.connections import ConnectionBudget, ConnectionLimits
from tests.http.server import RunnelServer

PROXY = "127.0.0.2"
CLIENT = "127.0.0.1"
CAPS = {"RUNNEL_STORAGE": "memory", "RUNNEL_DATABASE_URL": None,
        "RUNNEL_MAX_CONNECTIONS": "8", "RUNNEL_MAX_CONNECTIONS_PER_ADDRESS": "2",
        "RUNNEL_HEADER_TIMEOUT_SECONDS": "60", "RUNNEL_IDLE_TIMEOUT_SECONDS": "60"}
Connection = tuple[asyncio.StreamReader, asyncio.StreamWriter]


@pytest.fixture
def server(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[RunnelServer]:
    env: Mapping[str, str] = request.param
    started = RunnelServer.start({**CAPS, **env}, tmp_path, extra_args=("--access-log",))
    try:
        yield started
    finally:
        started.stop()


async def _open(server: RunnelServer, source: str) -> Connection:
    host, port = server.url.removeprefix("http://").rsplit(":", 1)
    return await asyncio.open_connection(host, int(port), local_addr=(source, 0))


async def _get(connection: Connection, path: str, forwarded_for: str | None = None
               ) -> tuple[int, bytes]:
    reader, writer = connection
    extra = f"X-Forwarded-For: {forwarded_for}\r\n" if forwarded_for else ""
    writer.write(f"GET {path} HTTP/1.1\r\nHost: runnel\r\n{extra}\r\n".encode())
    await writer.drain()
    head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 15)
    lines = head.decode("latin-1").split("\r\n")
    headers = {name.lower(): value.strip() for name, value in
               (line.split(":", 1) for line in lines[1:] if ":" in line)}
    body = await asyncio.wait_for(reader.readexactly(int(headers.get("content-length", 0))), 15)
    return int(lines[0].split()[1]), body


def _refused(status: int, body: bytes) -> bool:
    return status == 503 and json.loads(body)["code"] == "too_many_connections"


def _logged(server: RunnelServer, needle: str) -> bool:
    """Whether the access log names `needle` (it is written soon after each answer)."""
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        if needle in server.log.read_text():
            return True
        time.sleep(0.1)
    return False


@pytest.mark.parametrize("server", [{"RUNNEL_TRUSTED_PROXIES": PROXY}], indirect=True)
async def test_a_trusted_proxy_is_held_to_the_global_cap_and_names_its_clients(
        server: RunnelServer) -> None:
    through_proxy = [await _open(server, PROXY) for _ in range(6)]  # three times the address cap
    for n, connection in enumerate(through_proxy):
        assert (await _get(connection, f"/healthz?via=proxy{n}", f"203.0.113.{n}"))[0] == 200
    assert _logged(server, '203.0.113.5:0 - "GET /healthz?via=proxy5')

    direct = [await _open(server, CLIENT) for _ in range(2)]
    for connection in direct:
        assert (await _get(connection, "/healthz"))[0] == 200
    assert _refused(*await _get(await _open(server, PROXY), "/healthz"))  # 8 open: the global cap
    for _, writer in [*through_proxy, *direct]:
        writer.close()


@pytest.mark.parametrize("server", [{"RUNNEL_TRUSTED_PROXIES": "10.0.0.0/8"}], indirect=True)
async def test_a_client_that_is_not_a_trusted_proxy_cannot_choose_its_address(
        server: RunnelServer) -> None:
    spoofing = [await _open(server, CLIENT) for _ in range(2)]
    for n, connection in enumerate(spoofing):
        # Claims to be a proxy's client, and to come from a trusted proxy's network.
        status, _ = await _get(connection, f"/healthz?spoof={n}", f"198.51.100.{n}, 10.0.0.1")
        assert status == 200
    assert _refused(*await _get(await _open(server, CLIENT), "/healthz", "198.51.100.9"))
    assert _logged(server, f'{CLIENT}:')
    log = server.log.read_text()
    assert "198.51.100." not in log and "10.0.0.1" not in log, log
    for _, writer in spoofing:
        writer.close()


@pytest.mark.parametrize("server", [{"RUNNEL_TRUSTED_PROXIES": PROXY}], indirect=True)
async def test_behind_a_trusted_proxy_the_client_is_the_last_untrusted_hop(
        server: RunnelServer) -> None:
    """nginx appends the address it saw: what the client wrote before it is not taken."""
    connection = await _open(server, PROXY)
    assert (await _get(connection, "/healthz?hop", f"198.51.100.7, 192.0.2.44, {PROXY}"))[0] \
        == 200
    assert _logged(server, '192.0.2.44:0 - "GET /healthz?hop')
    assert "198.51.100.7" not in server.log.read_text()
    connection[1].close()


@pytest.mark.parametrize("value", ["*", "10.0.0.1/8", "proxy.internal", "[1"])
def test_trusted_proxies_are_addresses_or_networks(value: str,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RUNNEL_TRUSTED_PROXIES", value)
    with pytest.raises(ValueError, match="trusted_proxies"):
        Settings()


def test_trusted_proxies_take_a_list_or_a_json_list(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RUNNEL_TRUSTED_PROXIES", "10.0.0.5, fd00::/8")
    assert Settings().trusted_proxies == ("10.0.0.5/32", "fd00::/8")
    monkeypatch.setenv("RUNNEL_TRUSTED_PROXIES", '["192.168.0.0/16"]')
    assert Settings().trusted_proxies == ("192.168.0.0/16",)
    monkeypatch.delenv("RUNNEL_TRUSTED_PROXIES")
    assert Settings().trusted_proxies == ()


def test_a_proxy_s_connections_count_only_against_the_global_cap() -> None:
    budget = ConnectionBudget(ConnectionLimits(
        max_connections=4, max_per_address=1, max_streams=2, max_head_bytes=1024,
        header_timeout=1, body_timeout=1, min_body_rate=1, idle_timeout=1,
        trusted_proxies=("10.0.0.0/8",)))
    assert all(budget.admit("10.1.2.3") for _ in range(3))
    assert budget.enter_stream("10.1.2.3")
    budget.leave_stream("10.1.2.3")
    assert budget.admit("192.0.2.1") and not budget.admit("10.1.2.3")  # the global cap
    budget.release("10.1.2.3", "request")
    assert not budget.admit("192.0.2.1")  # a client still has its own cap
    assert budget.admit("10.9.9.9")
    assert (budget.requests, dict(budget.refused)) == (4, {"connections": 1, "address": 1})
