"""Residency across nodes of different regions on one database (SPEC §8): writes only at the
stream's metadata home (421 elsewhere), record content only through its egress regions (403)."""

from __future__ import annotations

import httpx
import pytest

from tests.http.server import bearer, token
from tests.http.support import assert_problem, has_event, read_events, records_of

PLACEMENT = {"metadata_home": "us", "object_regions": ["us"], "client_egress_regions": ["eu"],
             "log_region": "us"}


@pytest.fixture(scope="module")
def node_env() -> tuple[dict[str, str], dict[str, str]]:
    return {"RUNNEL_REGION": "us"}, {"RUNNEL_REGION": "eu"}


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


async def test_every_state_change_happens_only_at_the_metadata_home(
        clients: tuple[httpx.AsyncClient, httpx.AsyncClient], run_id: str) -> None:
    in_us, in_eu = clients
    admin = bearer(token(scopes=("streams:read", "streams:write", "streams:admin")))
    definition = {"stream_id": "s", "content_class": "x", "placement": PLACEMENT,
                  "consumers": ["ui"]}
    assert (await in_us.post(f"/runs/{run_id}/streams", json=definition)).status_code == 201
    records = {"records": [{"payload": "one"}]}
    assert (await in_us.post(f"/runs/{run_id}/streams/s/records", json=records)).status_code == 201

    ack = await in_eu.post(f"/runs/{run_id}/streams/s/consumers/ui/ack", json={"sequence": 1})
    assert_problem(ack, 421, "wrong_region")
    hold = await in_eu.put(f"/runs/{run_id}/streams/s/legal-hold",
                           json={"held": True, "reason": "case"}, headers=admin)
    assert_problem(hold, 421, "wrong_region")
    status = (await in_us.get(f"/runs/{run_id}/streams/s")).json()["status"]
    assert (status["consumers"], status["legal_hold"]) == ({"ui": 0}, False)

    # Erasing at a node that is home to none of the run's streams erases nothing, says so,
    # and seals the run against new records everywhere; the home then erases its streams.
    away = await in_eu.delete(f"/runs/{run_id}", headers=admin)
    assert away.status_code == 200, away.text
    assert (away.json()["records_deleted"], away.json()["elsewhere"]) == (
        0, [{"stream_id": "s", "metadata_home": "us"}])
    assert_problem(await in_us.post(f"/runs/{run_id}/streams/s/records", json=records), 410,
                   "run_erased")
    page = await in_eu.get(f"/runs/{run_id}/streams/s/records")
    assert [record["payload"] for record in page.json()["records"]] == ["one"]
    home = await in_us.delete(f"/runs/{run_id}", headers=admin)
    assert (home.json()["records_deleted"], home.json()["elsewhere"]) == (1, [])


async def test_definition_and_status_are_served_only_at_the_home_and_its_replicas(
        clients: tuple[httpx.AsyncClient, httpx.AsyncClient], run_id: str) -> None:
    in_us, in_eu = clients
    replicated = {**PLACEMENT, "metadata_replicas": ["eu"]}
    for stream_id, placement in (("replicated", replicated), ("home-only", PLACEMENT)):
        created = await in_us.post(f"/runs/{run_id}/streams", json={
            "stream_id": stream_id, "content_class": "x", "placement": placement})
        assert created.status_code == 201, created.text
    assert (await in_eu.get(f"/runs/{run_id}/streams/replicated")).status_code == 200
    assert_problem(await in_eu.get(f"/runs/{run_id}/streams/home-only"), 421, "wrong_region")
    listed = await in_eu.get(f"/runs/{run_id}/streams")
    assert [s["stream_id"] for s in listed.json()["streams"]] == ["replicated"]
    assert len((await in_us.get(f"/runs/{run_id}/streams")).json()["streams"]) == 2
