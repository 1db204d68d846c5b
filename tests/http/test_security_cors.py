"""Cross-origin access over a real server (ADR 0062): one policy, `RUNNEL_CORS_ORIGINS`, for
the native API and the Durable Streams facade. A listed origin gets its preflight answered
with the methods, headers and a max-age, and every answer names it and exposes what a client
reads; any other origin gets no `Access-Control-*` header at all, nor does anyone without
the setting; never credentials; `Vary: Origin` on every answer. The setting takes origins
only. (A real browser from a second origin: `test_security_cors_browser.py`.)"""

from __future__ import annotations

import httpx
import pytest

from entrypoints.auth.cors import parse_origins
from entrypoints.composition.settings import Settings
from tests.http.conftest import ServerPool
from tests.http.server import RunnelServer, bearer, token
from tests.http.support import create_stream

ALLOWED = "https://app.example.com"
SERVER_ENV = {"RUNNEL_CORS_ORIGINS": f"{ALLOWED},http://localhost:5173",
              "RUNNEL_CORS_MAX_AGE_SECONDS": "300"}
NATIVE = "/api/workflow-streams/runs/{run}/streams/s/records"
FACADE = "/v1/stream/cors-{run}"


def cors_headers(response: httpx.Response) -> dict[str, str]:
    return {name: value for name, value in response.headers.items()
            if name.startswith("access-control-")}


def varies_on_origin(response: httpx.Response) -> bool:
    return "origin" in [part.strip().lower() for part in response.headers.get(
        "vary", "").split(",")]


def preflight(origin: str, method: str = "POST",
              headers: str = "authorization, content-type") -> dict[str, str]:
    return {"Origin": origin, "Access-Control-Request-Method": method,
            "Access-Control-Request-Headers": headers}


@pytest.mark.parametrize("path", [NATIVE, FACADE])
async def test_a_listed_origins_preflight_is_answered_for_it_alone(
        server: RunnelServer, run_id: str, path: str) -> None:
    url = server.url + path.format(run=run_id)
    async with httpx.AsyncClient() as client:
        answered = await client.options(url, headers=preflight(ALLOWED, "DELETE",
                                                               "authorization, last-event-id"))
        refused = await client.options(url, headers=preflight("https://evil.example"))
        lookalike = await client.options(url, headers=preflight(ALLOWED + ".evil.example"))
    assert answered.status_code == 204
    allowed = cors_headers(answered)
    assert allowed["access-control-allow-origin"] == ALLOWED
    assert "DELETE" in allowed["access-control-allow-methods"]
    for name in ("authorization", "last-event-id", "content-type", "if-none-match"):
        assert name in allowed["access-control-allow-headers"].split(", ")
    assert allowed["access-control-max-age"] == "300"
    assert "access-control-allow-credentials" not in allowed
    assert varies_on_origin(answered)
    for other in (refused, lookalike):
        assert other.status_code == 204  # a preflight tells nothing about the route
        assert cors_headers(other) == {}
        assert varies_on_origin(other)


async def test_every_answer_to_a_listed_origin_names_it_and_exposes_what_a_client_reads(
        server: RunnelServer, run_id: str) -> None:
    headers = {**bearer(token()), "Origin": ALLOWED}
    async with httpx.AsyncClient(base_url=server.api, headers=headers) as api:
        await create_stream(api, run_id)
    async with httpx.AsyncClient(base_url=server.url, headers=headers) as client:
        for response in (await client.get(NATIVE.format(run=run_id)),
                         await client.get(f"/api/workflow-streams/runs/{run_id}/streams/nope"),
                         await client.get(NATIVE.format(run=run_id),
                                          headers={"Authorization": "Bearer nonsense"}),
                         await client.put(FACADE.format(run=run_id),
                                          headers={"Content-Type": "text/plain"})):
            granted = cors_headers(response)
            assert granted["access-control-allow-origin"] == ALLOWED, response
            exposed = granted["access-control-expose-headers"].split(", ")
            for name in ("retry-after", "x-request-id", "stream-next-offset",
                         "stream-cursor", "x-content-sha256"):
                assert name in exposed
            assert "access-control-allow-credentials" not in granted
            assert varies_on_origin(response)
        other = await client.get(NATIVE.format(run=run_id),
                                 headers={"Origin": "https://evil.example"})
        assert other.status_code == 200  # served, but a browser shows the page nothing
        assert cors_headers(other) == {} and varies_on_origin(other)


@pytest.mark.parametrize("path", [NATIVE, FACADE])
async def test_without_the_setting_no_origin_gets_access(
        servers: ServerPool, run_id: str, path: str) -> None:
    """The facade answered every origin `*`, DELETE included."""
    default = servers.get({})[0]
    url = default.url + path.format(run=run_id)
    async with httpx.AsyncClient(headers=bearer(token())) as client:
        answered = await client.options(url, headers=preflight(ALLOWED, "DELETE"))
        served = await client.get(url, headers={"Origin": ALLOWED})
    assert answered.status_code == 204
    assert cors_headers(answered) == {}
    assert served.status_code in (200, 404)
    assert cors_headers(served) == {}


def test_the_setting_takes_origins_only() -> None:
    assert parse_origins(["HTTPS://App.Example.com:443", "http://127.0.0.1:8080",
                          "http://[::1]:80", " https://a.example ", ""]) == (
        "https://app.example.com", "http://127.0.0.1:8080", "http://[::1]",
        "https://a.example")
    assert Settings(cors_origins="https://a.example,https://b.example:8443").cors_origins == (
        "https://a.example", "https://b.example:8443")
    assert Settings(cors_origins='["https://a.example"]').cors_origins == ("https://a.example",)
    assert Settings().cors_origins == ()
    for bad in ("*", "null", "https://a.example/", "https://a.example/app", "a.example",
                "ftp://a.example", "https://user@a.example", "https://a.example?x=1",
                "https://a.example#top", "https://bücher.example", "https://a.example:99999",
                "https://"):
        with pytest.raises(ValueError):
            Settings(cors_origins=bad)
