"""Large objects over HTTP on a real server, once on the filesystem store and once on S3
(moto's server over HTTP): prepare → upload (streamed) → commit, duplicates, mismatches
that keep nothing, size bounds, abort, scopes, egress and the record's download link."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Iterator
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

import httpx
import pytest
import pytest_asyncio

from domain.records import OBJECT_MAX_BYTES
from tests.http.objects_support import (
    StoreView,
    absolute,
    chunked,
    digest,
    objects_url,
    pins,
    prepare,
)
from tests.http.server import RunnelServer, bearer, token
from tests.http.support import assert_problem, create_stream
from tests.s3 import moto_s3_server

if TYPE_CHECKING:
    from tests.http.conftest import ServerPool

BODY = bytes(range(256)) * 4096 + b"tail"  # 1 MiB and a bit, several chunks


@pytest.fixture(scope="module", params=["fs", "s3"])
def store_kind(request: pytest.FixtureRequest) -> str:
    kind: str = request.param
    return kind


@pytest.fixture(scope="module")
def s3_bucket(store_kind: str) -> str | None:
    return moto_s3_server().new_bucket() if store_kind == "s3" else None


@pytest.fixture(scope="module")
def server(servers: ServerPool, store_kind: str, s3_bucket: str | None) -> RunnelServer:
    env = {"RUNNEL_OBJECT_STORE": store_kind}
    if s3_bucket is not None:
        s3 = moto_s3_server()
        env["RUNNEL_S3_REGIONS"] = json.dumps({"local": {
            "bucket": s3_bucket, "endpoint_url": s3.endpoint_url, "access_key": s3.access_key,
            "secret_key": s3.secret_key, "region_name": s3.region_name,
            "addressing_style": "path"}})
    return servers.get(env)[0]


@pytest.fixture
def store(server: RunnelServer, s3_bucket: str | None) -> Iterator[StoreView]:
    view = StoreView(server, moto_s3_server() if s3_bucket else None, s3_bucket)
    yield view
    assert view.multipart_uploads() == [], "an upload was left incomplete (billed parts)"


@pytest_asyncio.fixture
async def stream(api: httpx.AsyncClient, run_id: str) -> AsyncIterator[str]:
    await create_stream(api, run_id)
    yield objects_url(run_id)


async def test_lifecycle_prepare_upload_commit_read_download(
        server: RunnelServer, api: httpx.AsyncClient, run_id: str, stream: str,
        store: StoreView) -> None:
    first = await api.post(stream, json=pins(BODY))
    assert first.status_code == 201, first.text
    prepared = first.json()
    assert prepared["state"] == "prepared"
    assert set(prepared) == {"object_id", "state", "upload_url", "expires_at"}
    object_url = f"{stream}/{prepared['object_id']}"
    assert urlsplit(absolute(server, prepared["upload_url"])).path.endswith(
        object_url + "/body")

    again = await api.post(stream, json=pins(BODY))
    assert again.status_code == 200
    assert again.json()["object_id"] == prepared["object_id"]
    other = await api.post(stream, json=pins(BODY + b"!"))
    assert_problem(other, 409, "object_intent_conflict")
    assert_problem(await api.post(object_url + "/commit"), 409, "object_not_uploaded")

    upload = await api.put(absolute(server, prepared["upload_url"]), content=chunked(BODY),
                           headers={"Content-Type": "application/octet-stream"})
    assert upload.status_code == 200, upload.text
    assert upload.json() == {"state": "uploaded"}
    assert len(store.keys(run_id)) == 1

    commit = await api.post(object_url + "/commit")
    assert commit.status_code == 201, commit.text
    assert commit.json() == {"sequence": 1, "state": "committed"}
    duplicate = await api.post(object_url + "/commit")
    assert duplicate.status_code == 200
    assert duplicate.json() == {"sequence": 1, "state": "committed"}

    state = (await api.get(object_url)).json()
    assert state["state"] == "committed"
    assert state["sequence"] == 1
    assert (state["size"], state["sha256"], state["content_type"]) == (
        len(BODY), digest(BODY), "application/pdf")

    records = (await api.get(f"/runs/{run_id}/streams/s/records")).json()["records"]
    assert len(records) == 1
    reference = records[0]["object"]
    assert {k: reference[k] for k in ("object_id", "size", "sha256", "content_type")} == {
        "object_id": prepared["object_id"], "size": len(BODY), "sha256": digest(BODY),
        "content_type": "application/pdf"}
    download = await api.get(absolute(server, reference["href"]))
    assert download.status_code == 200
    assert download.content == BODY
    assert download.headers["content-type"].startswith("application/pdf")


async def test_a_body_larger_than_one_s3_part_streams_through(
        server: RunnelServer, api: httpx.AsyncClient, run_id: str, stream: str,
        store: StoreView) -> None:
    body = BODY * 9  # > 8 MiB: a multipart upload on S3
    prepared = await prepare(api, run_id, body)
    upload = await api.put(absolute(server, prepared["upload_url"]), content=chunked(body))
    assert upload.status_code == 200, upload.text
    assert (await api.post(f"{stream}/{prepared['object_id']}/commit")).status_code == 201
    download = await api.get(f"{stream}/{prepared['object_id']}/body")
    assert download.content == body


@pytest.mark.parametrize(("sent", "code"), [
    (b"x" * len(BODY), "digest_mismatch"),
    (BODY[:-1], "size_mismatch"),
    (BODY + b"more than declared" * 1000, "size_mismatch"),
], ids=["wrong digest", "short body", "longer than declared"])
async def test_a_mismatching_body_is_refused_and_nothing_is_kept(
        server: RunnelServer, api: httpx.AsyncClient, run_id: str, stream: str,
        store: StoreView, sent: bytes, code: str) -> None:
    prepared = await prepare(api, run_id, BODY)
    refused = await api.put(absolute(server, prepared["upload_url"]), content=chunked(sent))
    assert_problem(refused, 422, code)
    assert store.keys(run_id) == []
    object_url = f"{stream}/{prepared['object_id']}"
    assert (await api.get(object_url)).json()["state"] == "prepared"
    assert_problem(await api.post(object_url + "/commit"), 409, "object_not_uploaded")
    # The intent stays usable: the right body is accepted afterwards.
    retry = await api.put(absolute(server, prepared["upload_url"]), content=BODY)
    assert retry.status_code == 200, retry.text


async def test_objects_above_32_mib_are_refused_before_any_body_is_read(
        server: RunnelServer, api: httpx.AsyncClient, run_id: str, stream: str,
        store: StoreView) -> None:
    too_big = {**pins(b""), "size": OBJECT_MAX_BYTES + 1}
    assert_problem(await api.post(stream, json=too_big), 413, "too_large")

    prepared = await prepare(api, run_id, BODY)
    status = await _put_announcing(server, prepared["upload_url"], OBJECT_MAX_BYTES + 1)
    assert status == 413
    assert store.keys(run_id) == []


async def _put_announcing(server: RunnelServer, path: str, length: int) -> int:
    """Send only the headers of a PUT announcing `length` bytes; the status the server gives."""
    address = urlsplit(server.url)
    reader, writer = await asyncio.open_connection(address.hostname, address.port)
    try:
        writer.write((f"PUT {path} HTTP/1.1\r\nHost: {address.netloc}\r\n"
                      f"Authorization: Bearer {token()}\r\nContent-Length: {length}\r\n"
                      "Content-Type: application/octet-stream\r\n\r\n").encode())
        await writer.drain()
        async with asyncio.timeout(30):
            status_line = await reader.readline()
    finally:
        writer.close()
    return int(status_line.split()[1])


async def test_abort_removes_the_body_and_refuses_a_later_commit(
        server: RunnelServer, api: httpx.AsyncClient, run_id: str, stream: str,
        store: StoreView) -> None:
    prepared = await prepare(api, run_id, BODY)
    object_url = f"{stream}/{prepared['object_id']}"
    assert (await api.put(absolute(server, prepared["upload_url"]), content=BODY)
            ).status_code == 200
    aborted = await api.post(object_url + "/abort")
    assert aborted.status_code == 200
    assert aborted.json() == {"state": "aborted"}
    assert store.keys(run_id) == []
    assert (await api.post(object_url + "/abort")).json() == {"state": "aborted"}
    assert_problem(await api.post(object_url + "/commit"), 409, "object_state_conflict")
    assert_problem(await api.put(absolute(server, prepared["upload_url"]), content=BODY),
                   409, "object_state_conflict")
    assert_problem(await api.get(object_url + "/body"), 404, "not_found")
    assert (await api.get(f"/runs/{run_id}/streams/s/records")).json()["records"] == []


async def test_writers_write_and_readers_read(
        server: RunnelServer, api: httpx.AsyncClient, run_id: str, stream: str) -> None:
    reader = bearer(token(sub="rita", scopes=("streams:read",)))
    writer = bearer(token(sub="wes", scopes=("streams:write",)))
    assert_problem(await api.post(stream, json=pins(BODY), headers=reader), 403, "forbidden")
    prepared_by_wes = await api.post(stream, json=pins(BODY), headers=writer)
    assert prepared_by_wes.status_code == 201, prepared_by_wes.text
    prepared = prepared_by_wes.json()
    object_url = f"{stream}/{prepared['object_id']}"
    # Another writer (alice) may not take the steps of wes's upload (the receipt, ADR 0025).
    assert_problem(await api.put(object_url + "/body", content=BODY), 403, "not_intent_owner")
    assert_problem(await api.put(object_url + "/body", content=BODY, headers=reader),
                   403, "forbidden")
    assert_problem(await api.put(object_url + "/body", content=BODY, headers={
        "Authorization": ""}), 401, "unauthenticated")
    assert (await api.put(object_url + "/body", content=BODY, headers=writer)).status_code == 200
    assert_problem(await api.post(object_url + "/commit", headers=reader), 403, "forbidden")
    assert (await api.post(object_url + "/commit", headers=writer)).status_code == 201
    assert_problem(await api.get(object_url + "/body", headers=writer), 403, "forbidden")
    download = await api.get(object_url + "/body", headers=reader)
    assert download.content == BODY
    assert (await api.get(object_url, headers=reader)).json()["state"] == "committed"
    other_tenant = bearer(token(tenant="t2"))
    assert_problem(await api.get(object_url, headers=other_tenant), 404, "not_found")


async def test_egress_rules_and_unserved_object_regions(
        server: RunnelServer, api: httpx.AsyncClient, run_id: str) -> None:
    await create_stream(api, run_id, "sealed", placement={"client_egress_regions": ["eu"]})
    prepared = await prepare(api, run_id, BODY, stream_id="sealed")
    object_url = f"{objects_url(run_id, 'sealed')}/{prepared['object_id']}"
    assert (await api.put(object_url + "/body", content=BODY)).status_code == 200
    assert (await api.post(object_url + "/commit")).status_code == 201
    assert_problem(await api.get(object_url + "/body"), 403, "egress_denied")

    # A region this node has no store for is refused at prepare, before any body moves.
    await create_stream(api, run_id, "elsewhere", placement={"object_regions": ["eu"]})
    refused = await api.post(objects_url(run_id, "elsewhere"), json=pins(BODY))
    assert_problem(refused, 503, "object_region_unavailable")
    assert "(eu)" in refused.json()["detail"]


OBJECT_ROUTES = [
    ("POST", "", {"idempotency_key": "k", "sha256": "0" * 64, "size": 1,
                  "content_type": "text/plain"}),
    ("PUT", "/{object}/body", None),
    ("POST", "/{object}/commit", None),
    ("POST", "/{object}/abort", None),
    ("GET", "/{object}", None),
    ("GET", "/{object}/body", None),
]


@pytest.mark.parametrize(("method", "path", "body"), OBJECT_ROUTES,
                         ids=[f"{m} objects{p}" for m, p, _ in OBJECT_ROUTES])
async def test_every_object_route_needs_a_token(
        api: httpx.AsyncClient, run_id: str, stream: str, method: str, path: str,
        body: object) -> None:
    prepared = await prepare(api, run_id, BODY)
    url = stream + path.format(object=prepared["object_id"])
    for headers in ({"Authorization": ""}, {"Authorization": "Bearer not-a-jwt"}):
        response = await api.request(method, url, json=body, headers=headers)
        assert_problem(response, 401, "unauthenticated")
    assert (await api.get(f"{stream}/{prepared['object_id']}")).json()["state"] == "prepared"
