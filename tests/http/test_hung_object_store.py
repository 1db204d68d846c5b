"""A hung S3 under a real server: an upload is answered 503 `object_store_unavailable`
within the node's S3 bounds (ADR 0050), never held for minutes, and its retry once S3
answers again stores the body once."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import TYPE_CHECKING

import httpx
import pytest

from tests.http.objects_support import absolute, digest, prepare
from tests.http.server import RunnelServer
from tests.http.support import assert_problem, create_stream
from tests.integration.blackhole_proxy import ProxyThread
from tests.integration.support import DEADLINE
from tests.s3 import moto_s3_server

if TYPE_CHECKING:
    from tests.http.conftest import ServerPool

BODY = bytes(range(256)) * 512  # 128 KiB: one PutObject


@pytest.fixture(scope="module")
def s3_proxy() -> Iterator[ProxyThread]:
    proxy = ProxyThread(moto_s3_server().endpoint_url)
    yield proxy
    proxy.close()


@pytest.fixture(scope="module")
def server(servers: ServerPool, s3_proxy: ProxyThread) -> RunnelServer:
    s3 = moto_s3_server()
    regions = {"local": {"bucket": s3.new_bucket(), "endpoint_url": s3_proxy.start(),
                         "access_key": s3.access_key, "secret_key": s3.secret_key,
                         "region_name": s3.region_name, "addressing_style": "path"}}
    return servers.get({"RUNNEL_OBJECT_STORE": "s3", "RUNNEL_S3_REGIONS": json.dumps(regions),
                        "RUNNEL_S3_CONNECT_TIMEOUT_SECONDS": "1",
                        "RUNNEL_S3_READ_TIMEOUT_SECONDS": "1",
                        "RUNNEL_S3_MAX_ATTEMPTS": "2"})[0]


async def test_an_upload_to_a_hung_s3_is_a_503_and_its_retry_stores_it_once(
        server: RunnelServer, s3_proxy: ProxyThread, api: httpx.AsyncClient,
        run_id: str) -> None:
    await create_stream(api, run_id)
    prepared = await prepare(api, run_id, BODY)
    upload_url = absolute(server, prepared["upload_url"])
    s3_proxy.hang()
    try:  # the deadline only stands in for "never": a hang fails the test
        hung = await api.put(upload_url, content=BODY, timeout=DEADLINE)
    finally:
        s3_proxy.admit()
    assert_problem(hung, 503, "object_store_unavailable")
    assert hung.headers["retry-after"]

    retried = await api.put(upload_url, content=BODY, timeout=DEADLINE)
    assert retried.status_code == 200, retried.text
    object_url = f"/runs/{run_id}/streams/s/objects/{prepared['object_id']}"
    commit = await api.post(object_url + "/commit")
    assert commit.status_code == 201, commit.text
    state = (await api.get(object_url)).json()
    assert (state["state"], state["size"], state["sha256"]) == (
        "committed", len(BODY), digest(BODY))
    records = (await api.get(f"/runs/{run_id}/streams/s/records")).json()["records"]
    assert [record["object"]["object_id"] for record in records] == [prepared["object_id"]]
    download = await api.get(absolute(server, records[0]["object"]["href"]))
    assert download.content == BODY
