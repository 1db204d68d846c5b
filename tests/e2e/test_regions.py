"""Residency across nodes of different regions on one database (SPEC §8): writes only at the
stream's metadata home (421 elsewhere), record content only through its egress regions (403)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import httpx
import pytest
import pytest_asyncio

from tests.http.server import RunnelServer, bearer, running_server, token
from tests.http.support import assert_problem, has_event, read_events, records_of

PLACEMENT = {"metadata_home": "us", "object_regions": ["us"], "client_egress_regions": ["eu"],
             "log_region": "us"}


@pytest.fixture(scope="module")
def nodes(database: str, tmp_path_factory: pytest.TempPathFactory
          ) -> Iterator[tuple[RunnelServer, RunnelServer]]:
    env = {"RUNNEL_DATABASE_URL": database, "RUNNEL_STORAGE": "postgres"}
    with running_server({**env, "RUNNEL_REGION": "us"}, tmp_path_factory.mktemp("us")) as us, \
            running_server({**env, "RUNNEL_REGION": "eu"}, tmp_path_factory.mktemp("eu")) as eu:
        yield us, eu


@pytest_asyncio.fixture
async def clients(nodes: tuple[RunnelServer, RunnelServer]
                  ) -> AsyncIterator[tuple[httpx.AsyncClient, httpx.AsyncClient]]:
    us, eu = nodes
    async with httpx.AsyncClient(base_url=us.api, headers=bearer(token()), timeout=30) as in_us, \
            httpx.AsyncClient(base_url=eu.api, headers=bearer(token()), timeout=30) as in_eu:
        yield in_us, in_eu


async def test_writes_only_at_the_metadata_home_and_content_only_through_egress_regions(
        clients: tuple[httpx.AsyncClient, httpx.AsyncClient], run_id: str) -> None:
    in_us, in_eu = clients
    definition = {"stream_id": "s", "content_class": "x", "placement": PLACEMENT}
    assert_problem(await in_eu.post(f"/runs/{run_id}/streams", json=definition), 421,
                   "wrong_region")
    assert (await in_us.post(f"/runs/{run_id}/streams", json=definition)).status_code == 201

    records = {"records": [{"payload": "secret"}]}
    assert_problem(await in_eu.post(f"/runs/{run_id}/streams/s/records", json=records), 421,
                   "wrong_region")
    assert (await in_us.post(f"/runs/{run_id}/streams/s/records", json=records)).status_code == 201
    assert (await in_us.post(f"/runs/{run_id}/streams/s/close")).status_code == 200

    # The definition is metadata and may be read at home; the records may not leave there.
    assert (await in_us.get(f"/runs/{run_id}/streams/s")).status_code == 200
    assert_problem(await in_us.get(f"/runs/{run_id}/streams/s/records"), 403, "egress_denied")
    assert_problem(await in_us.get(f"/runs/{run_id}/streams/s/subscribe"), 403, "egress_denied")
    page = await in_eu.get(f"/runs/{run_id}/streams/s/records")
    assert [record["payload"] for record in page.json()["records"]] == ["secret"]
    events = await read_events(in_eu, f"/runs/{run_id}/streams/s/subscribe",
                               until=has_event("end"))
    assert records_of(events) == [1]


async def test_a_stream_created_without_placement_lives_in_the_creating_nodes_region(
        clients: tuple[httpx.AsyncClient, httpx.AsyncClient], run_id: str) -> None:
    _, in_eu = clients
    created = await in_eu.post(f"/runs/{run_id}/streams", json={"stream_id": "s",
                                                                "content_class": "x"})
    placement = created.json()["definition"]["placement"]
    assert (placement["metadata_home"], placement["client_egress_regions"]) == ("eu", ["eu"])
