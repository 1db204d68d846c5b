"""A real server on real Postgres behind a proxy that can hang it: a hung database answers
503 `store_unavailable` with `Retry-After`, never a hang or a 500; `/readyz` says so
within its bound; and once the database is back, the retry with the same idempotency
key tells what was stored."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest

from entrypoints.composition.settings import Settings
from tests.http.server import RunnelServer, bearer, token
from tests.http.support import assert_problem
from tests.integration.blackhole_proxy import ProxyThread
from tests.integration.support import DEADLINE
from tests.pg import pg_dsn, pg_template  # noqa: F401  (fixtures)

pytestmark = pytest.mark.postgres

RECORDS = "/runs/r/streams/s/records"


@contextmanager
def server_through_proxy(dsn: str, tmp_path: Path, env: dict[str, str | None]
                         ) -> Iterator[tuple[httpx.Client, ProxyThread, str]]:
    """A real server on Postgres through a proxy the test can hang or pause: its API
    client, the proxy and the server's base URL."""
    proxy = ProxyThread(dsn)
    server = RunnelServer.start({"RUNNEL_DATABASE_URL": proxy.start(),
                                 "RUNNEL_STORAGE": "postgres", **env}, tmp_path)
    try:
        with httpx.Client(base_url=server.api, headers=bearer(token()), timeout=DEADLINE) as api:
            yield api, proxy, server.url
    finally:
        server.stop()
        proxy.close()


@pytest.fixture
def hung(pg_dsn: str, tmp_path: Path) -> Iterator[tuple[httpx.Client, ProxyThread, str]]:  # noqa: F811
    with server_through_proxy(pg_dsn, tmp_path, {
            "RUNNEL_DB_STATEMENT_TIMEOUT_SECONDS": "1", "RUNNEL_DB_ACQUIRE_TIMEOUT_SECONDS": "1",
            "RUNNEL_DB_CONNECT_TIMEOUT_SECONDS": "1"}) as served:
        yield served


def test_a_hung_database_is_503_store_unavailable_and_the_key_settles_the_retry(
        hung: tuple[httpx.Client, ProxyThread, str]) -> None:
    api, proxy, server_url = hung
    created = api.post("/runs/r/streams", json={"stream_id": "s", "content_class": "output.text"})
    assert created.status_code == 201
    ready = server_url + "/readyz"
    assert api.get(ready).status_code == 200
    proxy.hang()
    body = {"records": [{"payload": "kept", "idempotency_key": "k1"}]}
    refused = api.post(RECORDS, json=body)
    assert_problem(refused, 503, "store_unavailable")
    assert refused.headers["retry-after"] == "2"
    assert "same idempotency keys" in refused.json()["detail"]
    assert_problem(api.get(RECORDS), 503, "store_unavailable")
    assert_problem(api.get(ready), 503, "not_ready")
    proxy.admit()
    while (retried := api.post(RECORDS, json=body)).status_code == 503:
        time.sleep(0.2)
    assert retried.status_code in (200, 201) and retried.json()["sequences"] == [1]
    assert [r["payload"] for r in api.get(RECORDS).json()["records"]] == ["kept"]


DEFAULT_BUDGET = Settings.model_fields["db_request_budget_seconds"].default
BUDGET_MARGIN = 2.0
"""Slack over the request budget for the answer to travel; a behaviour bound, not a benchmark."""


@pytest.fixture
def paused_server(pg_dsn: str, tmp_path: Path  # noqa: F811
                  ) -> Iterator[tuple[httpx.Client, ProxyThread, str]]:
    """A server on the default database bounds (only the budget named), through a proxy."""
    with server_through_proxy(pg_dsn, tmp_path,
                              {"RUNNEL_DB_REQUEST_BUDGET_SECONDS": None}) as served:
        yield served


def test_an_append_to_a_frozen_database_answers_503_within_the_default_budget(
        paused_server: tuple[httpx.Client, ProxyThread, str]) -> None:
    # A frozen server (SIGSTOP): every byte held, nothing refused; the append's statement,
    # the cancel request and the connection's release would each wait their own bound.
    api, proxy, server_url = paused_server
    assert api.post("/runs/r/streams", json={"stream_id": "s",
                                            "content_class": "output.text"}).status_code == 201
    first = {"records": [{"payload": "first", "idempotency_key": "k0"}]}
    assert api.post(RECORDS, json=first).status_code == 201
    proxy.pause()
    body = {"records": [{"payload": "kept", "idempotency_key": "k1"}]}
    began = time.monotonic()
    refused = api.post(RECORDS, json=body)
    answered_in = time.monotonic() - began
    assert_problem(refused, 503, "store_unavailable")
    assert refused.headers["retry-after"] == "2"
    assert answered_in <= DEFAULT_BUDGET + BUDGET_MARGIN, answered_in
    began = time.monotonic()
    assert_problem(api.get(server_url + "/readyz"), 503, "not_ready")
    assert time.monotonic() - began <= 3.0
    proxy.resume()
    while (retried := api.post(RECORDS, json=body)).status_code == 503:
        time.sleep(0.2)
    assert retried.status_code in (200, 201) and retried.json()["sequences"] == [2]
    assert [r["payload"] for r in api.get(RECORDS).json()["records"]] == ["first", "kept"]
