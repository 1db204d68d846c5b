"""Object residency across two real nodes on one database (docs/adr/0058): node `with_s3`
has an S3 store (moto over HTTP) for region `eu`, node `bare` only its filesystem store for
its own region. A stream pinned to `eu` is created anywhere, its objects are refused at
prepare on `bare` (leaving nothing) and prepared, uploaded and committed on `with_s3`; an
upload sent to `bare` for an intent prepared on `with_s3` is refused and keeps nothing."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator
from typing import TYPE_CHECKING

import httpx
import pytest
import pytest_asyncio

from tests.http.conftest import DEFAULT_ENV
from tests.http.objects_support import absolute, objects_url, pins
from tests.http.server import RunnelServer, bearer, token
from tests.http.support import assert_problem, create_stream
from tests.s3 import moto_s3_server

if TYPE_CHECKING:
    from tests.http.conftest import ServerPool

BODY = b"%PDF-1.7 " + bytes(range(256)) * 64


@pytest.fixture(scope="module")
def nodes(servers: ServerPool, tmp_path_factory: pytest.TempPathFactory
          ) -> Iterator[tuple[RunnelServer, RunnelServer]]:
    s3 = moto_s3_server()
    with_s3, dsn = servers.get({"RUNNEL_S3_REGIONS": json.dumps({"eu": {
        "bucket": s3.new_bucket(), "endpoint_url": s3.endpoint_url,
        "access_key": s3.access_key, "secret_key": s3.secret_key,
        "region_name": s3.region_name, "addressing_style": "path"}})})
    bare = RunnelServer.start({**DEFAULT_ENV, "RUNNEL_DATABASE_URL": dsn},
                              tmp_path_factory.mktemp("bare"))
    try:
        yield with_s3, bare
    finally:
        bare.stop()


@pytest_asyncio.fixture
async def clients(nodes: tuple[RunnelServer, RunnelServer]
                  ) -> AsyncIterator[tuple[httpx.AsyncClient, httpx.AsyncClient]]:
    with_s3, bare = nodes
    async with httpx.AsyncClient(base_url=with_s3.api, headers=bearer(token()),
                                 timeout=30) as near, \
            httpx.AsyncClient(base_url=bare.api, headers=bearer(token()), timeout=30) as far:
        yield near, far


async def test_a_node_without_a_store_for_the_pinned_region_refuses_at_prepare(
        nodes: tuple[RunnelServer, RunnelServer],
        clients: tuple[httpx.AsyncClient, httpx.AsyncClient], run_id: str) -> None:
    with_s3, bare = nodes
    near, far = clients
    # Created on the node without the store: the store may be on another node.
    await create_stream(far, run_id, placement={"object_regions": ["eu"]})
    refused = await far.post(objects_url(run_id), json=pins(BODY))
    assert_problem(refused, 503, "object_region_unavailable")
    assert "(eu)" in refused.json()["detail"]
    # The refusal left no intent: the same key is new on the node that has the store.
    prepared = await near.post(objects_url(run_id), json=pins(BODY))
    assert prepared.status_code == 201, prepared.text
    upload_url = prepared.json()["upload_url"]
    async with httpx.AsyncClient(headers=bearer(token()), timeout=30) as client:
        # An intent prepared where the store is, uploaded through the node without it.
        misrouted = await client.put(absolute(bare, upload_url), content=BODY)
        assert_problem(misrouted, 503, "object_region_unavailable")
        assert [path for path in (bare.log.parent / "objects").rglob("*")
                if path.is_file()] == []
        uploaded = await client.put(absolute(with_s3, upload_url), content=BODY)
        assert uploaded.status_code == 200, uploaded.text
    object_id = prepared.json()["object_id"]
    committed = await near.post(f"{objects_url(run_id)}/{object_id}/commit")
    assert committed.status_code == 201, committed.text
