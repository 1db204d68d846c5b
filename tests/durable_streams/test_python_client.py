"""The protocol's own Python client (`durable-streams` 0.1.0 from PyPI), written elsewhere
and used unchanged, appends to and reads from Runnel through the facade (ADR 0041)."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from itertools import islice

import httpx
import pytest
from durable_streams import DurableStream, StreamNotFoundError, stream

from tests.http.restart import RestartableServer, restartable_server
from tests.http.server import bearer, token
from tests.pg import pg_template  # noqa: F401  (fixture)


@pytest.fixture(scope="module")
def server(pg_template: str, tmp_path_factory: pytest.TempPathFactory,  # noqa: F811
           ) -> Iterator[RestartableServer]:
    with restartable_server(pg_template, tmp_path_factory.mktemp("ds-client"),
                            {"RUNNEL_DURABLE_STREAMS_LONG_POLL_SECONDS": "2"}) as running:
        yield running


def url_of(server: RestartableServer, name: str) -> str:
    return f"{server.url}/v1/stream/{name}-{uuid.uuid4().hex[:8]}"


AUTH = bearer(token(tenant="ds-client"))


def test_the_python_client_appends_json_and_reads_it_back(server: RestartableServer) -> None:
    url = url_of(server, "client-json")
    handle = DurableStream.create(url, content_type="application/json", headers=AUTH)
    with handle:
        first = handle.append({"step": 1})
        second = handle.append([{"step": 2}, {"step": 3}])  # one message: a list
        assert first.next_offset < second.next_offset
        with handle.stream(live=False) as response:
            assert response.read_json() == [{"step": 1}, [{"step": 2}, {"step": 3}]]
        with stream(url, offset=first.next_offset, live=False, headers=AUTH) as response:
            assert response.read_json() == [[{"step": 2}, {"step": 3}]]
    # The same records, read through the native API by the tenant that wrote them.
    run_id = httpx.head(url, headers=AUTH).headers["runnel-run-id"]
    native = httpx.get(f"{server.api}/runs/{run_id}/streams/stream/records", headers=AUTH)
    assert [record["payload"] for record in native.json()["records"]] == [
        [{"step": 1}], [[{"step": 2}, {"step": 3}]]]


def test_the_python_client_follows_a_byte_stream_live(server: RestartableServer) -> None:
    url = url_of(server, "client-bytes")
    with DurableStream.create(url, content_type="text/plain", headers=AUTH) as handle:
        for word in ("durable ", "streams ", "on ", "runnel"):
            handle.append(word)
        # The protocol requires an offset in the live modes; the client sends none by default.
        with handle.stream(offset="-1", live="sse") as response:
            assert "".join(islice(response.iter_text(), 1)) == "durable streams on runnel"
        with handle.stream(offset="-1", live="long-poll") as response:
            assert response.read_text() == "durable streams on runnel"


def test_the_python_client_sees_another_tenants_stream_as_missing(
        server: RestartableServer) -> None:
    url = url_of(server, "client-tenant")
    DurableStream.create(url, content_type="text/plain", headers=AUTH).close()
    other = bearer(token(tenant="someone-else"))
    with pytest.raises(StreamNotFoundError):
        DurableStream.head_static(url, headers=other)
