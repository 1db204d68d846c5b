"""`/metrics` on the API port (ADR 0061): with `RUNNEL_METRICS_TOKEN` it answers only that
token, never an anonymous client nor an API token, even an admin's; without the setting it
needs no token, as the contract says, and `runnel serve` warns when such a node listens
beyond loopback. What it shows names no tenant, run or stream, and a client cannot mint
label values (an invented HTTP method)."""

from __future__ import annotations

import httpx
import pytest

from entrypoints.composition.settings import Settings
from tests.http.conftest import ServerPool
from tests.http.server import METRICS, METRICS_TOKEN, RunnelServer, bearer, token
from tests.http.support import append, assert_problem, create_stream
from tests.metrics_text import Samples

SECRET_TENANT = "tenant-0a1b2c"
SECRET_RUN = "run-3d4e5f"
SECRET_STREAM = "stream-6a7b8c"


async def test_anonymous_and_api_tokens_get_no_metrics(server: RunnelServer) -> None:
    admin = bearer(token(scopes=("streams:admin", "streams:read", "streams:write")))
    async with httpx.AsyncClient(base_url=server.url) as client:
        for headers in ({}, admin, {"Authorization": f"Bearer {METRICS_TOKEN}x"},
                        {"Authorization": METRICS_TOKEN}, {"Authorization": "Basic eDp5"}):
            refused = await client.get("/metrics", headers=headers)
            assert_problem(refused, 401, "unauthenticated")
            assert refused.headers["www-authenticate"].startswith("Bearer")
            assert "runnel_" not in refused.text
        served = await client.get("/metrics", headers=METRICS)
    assert served.status_code == 200
    assert "runnel_records_appended_total" in served.text


async def test_without_a_metrics_token_the_api_port_serves_metrics_without_one(
        servers: ServerPool) -> None:
    unset = servers.get({"RUNNEL_METRICS_TOKEN": None})[0]
    async with httpx.AsyncClient(base_url=unset.url) as client:
        for headers in ({}, {"Authorization": "Bearer x"}):
            served = await client.get("/metrics", headers=headers)
            assert served.status_code == 200
            assert "runnel_records_appended_total" in served.text


@pytest.mark.parametrize(("host", "token", "warned"), [
    ("0.0.0.0", None, True), ("10.1.2.3", None, True), ("127.0.0.1", None, False),
    ("localhost", None, False), ("0.0.0.0", "m" * 32, False)])
def test_serve_warns_when_open_metrics_face_more_than_loopback(
        host: str, token: str | None, warned: bool, caplog: pytest.LogCaptureFixture) -> None:
    from entrypoints.commands.serve import warn_open_metrics

    with caplog.at_level("WARNING", logger="runnel.config"):
        warn_open_metrics(Settings(metrics_token=token), host)
    assert any("RUNNEL_METRICS_TOKEN" in r.getMessage() for r in caplog.records) is warned


async def test_metrics_name_no_tenant_run_or_stream_and_take_no_invented_label(
        server: RunnelServer) -> None:
    headers = bearer(token(tenant=SECRET_TENANT))
    async with httpx.AsyncClient(base_url=server.api, headers=headers) as api:
        await create_stream(api, SECRET_RUN, SECRET_STREAM, consumers=["ui"])
        await append(api, SECRET_RUN, SECRET_STREAM, ["x"])
        await api.get(f"/runs/{SECRET_RUN}/streams/{SECRET_STREAM}/records")
        await api.get(f"/runs/{SECRET_RUN}/streams/{SECRET_STREAM}-missing")
        # Methods the HTTP parser knows, that no route takes (it refuses unknown ones).
        await api.request("PROPFIND", f"/runs/{SECRET_RUN}/streams")
        await api.request("MKCOL", f"/{SECRET_RUN}")
    async with httpx.AsyncClient(base_url=server.url) as client:
        await client.put(f"/v1/stream/{SECRET_RUN}", headers=headers)
        text = (await client.get("/metrics", headers=METRICS)).text
    for secret in (SECRET_TENANT, SECRET_RUN, SECRET_STREAM, "PROPFIND", "MKCOL"):
        assert secret not in text and secret.lower() not in text.lower(), secret
    methods = {labels.get("method") for labels in
               Samples(text).labels("runnel_http_request_duration_seconds_count")}
    assert methods <= {"GET", "HEAD", "POST", "PUT", "DELETE", "OPTIONS", "PATCH", "other"}
    assert "other" in methods


def test_the_metrics_token_is_a_secret_of_32_bytes_at_least() -> None:
    assert Settings(metrics_token="m" * 32).metrics_token is not None
    assert Settings().metrics_token is None
    for bad in ("", "short", "m" * 31):  # an empty variable is a mistake, not "unset"
        with pytest.raises(ValueError):
            Settings(metrics_token=bad)
