"""Acknowledgements over HTTP: they only advance, only declared consumers exist (a pin says
who may ack one), and they feed credit."""

from __future__ import annotations

import httpx

from tests.http.server import bearer, token
from tests.http.support import append, assert_problem, create_stream


def ack_url(run_id: str, consumer: str = "ui", stream_id: str = "s") -> str:
    return f"/runs/{run_id}/streams/{stream_id}/consumers/{consumer}/ack"


async def test_acks_advance_and_re_acking_the_current_value_is_200(api: httpx.AsyncClient,
                                                                  run_id: str) -> None:
    await create_stream(api, run_id, consumers=["ui"])
    await append(api, run_id, "s", [1, 2, 3, 4, 5])
    response = await api.post(ack_url(run_id), json={"sequence": 5})
    assert (response.status_code, response.json()) == (200, {"consumer_id": "ui", "acked": 5})
    again = await api.post(ack_url(run_id), json={"sequence": 5})
    assert (again.status_code, again.json()) == (200, {"consumer_id": "ui", "acked": 5})
    status = (await api.get(f"/runs/{run_id}/streams/s")).json()["status"]
    assert status["consumers"] == {"ui": 5}


async def test_an_ack_below_the_current_one_is_409_and_changes_nothing(
        api: httpx.AsyncClient, run_id: str) -> None:
    await create_stream(api, run_id, consumers=["ui"])
    await append(api, run_id, "s", [1, 2, 3])
    await api.post(ack_url(run_id), json={"sequence": 3})
    assert_problem(await api.post(ack_url(run_id), json={"sequence": 2}), 409, "ack_regression")
    status = (await api.get(f"/runs/{run_id}/streams/s")).json()["status"]
    assert status["consumers"] == {"ui": 3}


async def test_an_ack_beyond_head_is_400(api: httpx.AsyncClient, run_id: str) -> None:
    await create_stream(api, run_id, consumers=["ui"])
    await append(api, run_id, "s", [1])
    assert_problem(await api.post(ack_url(run_id), json={"sequence": 2}), 400, "ack_beyond_head")


READ_ONLY = bearer(token(sub="mallory", scopes=("streams:read",)))


async def test_a_read_only_principal_cannot_freeze_the_producer_with_an_undeclared_consumer(
        api: httpx.AsyncClient, run_id: str) -> None:
    await create_stream(api, run_id, credit={"max_unread_items": 2}, consumers=["ui"])
    await append(api, run_id, "s", [1, 2])
    squat = await api.post(ack_url(run_id, "squatter"), json={"sequence": 0}, headers=READ_ONLY)
    assert_problem(squat, 404, "consumer_not_found")
    assert (await api.post(ack_url(run_id), json={"sequence": 2})).status_code == 200
    assert await append(api, run_id, "s", [3, 4]) == [3, 4]
    status = (await api.get(f"/runs/{run_id}/streams/s")).json()["status"]
    assert status["consumers"] == {"ui": 2}


async def test_a_reader_cannot_claim_a_declared_consumer_before_its_owner(
        api: httpx.AsyncClient, run_id: str) -> None:
    await create_stream(api, run_id, consumers=[{"id": "ui", "principals": ["alice"]}, "log"])
    await append(api, run_id, "s", [1, 2])
    claim = await api.post(ack_url(run_id), json={"sequence": 0}, headers=READ_ONLY)
    assert_problem(claim, 403, "consumer_scope")
    assert (await api.post(ack_url(run_id), json={"sequence": 2})).json()["acked"] == 2
    # A plain declaration belongs to nobody: any reader may move it, first or not.
    assert (await api.post(ack_url(run_id, "log"), json={"sequence": 1},
                           headers=READ_ONLY)).status_code == 200
    assert (await api.post(ack_url(run_id, "log"), json={"sequence": 2})).status_code == 200


async def test_the_declaration_with_principals_round_trips_in_the_definition(
        api: httpx.AsyncClient, run_id: str) -> None:
    created = await create_stream(
        api, run_id, consumers=[{"id": "ui", "principals": ["alice"]}, "log", {"id": "x"}])
    assert created["definition"]["consumers"] == [
        {"id": "ui", "principals": ["alice"]}, "log", "x"]
    assert created["status"]["consumers"] == {"ui": 0, "log": 0, "x": 0}
    bad = await api.post(f"/runs/{run_id}/streams", json={
        "stream_id": "t", "content_class": "output.text",
        "consumers": [{"id": "ui", "principals": []}]})
    assert_problem(bad, 422, "invalid_definition")


async def test_a_stream_without_consumers_takes_a_long_answer_without_backpressure(
        api: httpx.AsyncClient, run_id: str) -> None:
    await create_stream(api, run_id)
    for start in range(0, 1200, 400):
        response = await api.post(f"/runs/{run_id}/streams/s/records", json={
            "records": [{"payload": {"token": n}} for n in range(start, start + 400)]})
        assert response.status_code == 201, response.text
    assert (await api.get(f"/runs/{run_id}/streams/s")).json()["status"]["head"] == 1200


async def test_backpressure_names_the_consumers_holding_it_and_the_ceiling(
        api: httpx.AsyncClient, run_id: str) -> None:
    await create_stream(api, run_id, credit={"max_unread_items": 2}, consumers=["ui", "audit"])
    await append(api, run_id, "s", [1, 2])
    await api.post(ack_url(run_id), json={"sequence": 2})
    full = await api.post(f"/runs/{run_id}/streams/s/records", json={"records": [{"payload": 3}]})
    body = assert_problem(full, 429, "backpressure")
    assert (body["consumers"], body["unread_items"], body["max_unread_items"]) == (
        ["audit"], 2, 2)
    assert "audit" in body["detail"]


async def test_malformed_acks_are_400(api: httpx.AsyncClient, run_id: str) -> None:
    await create_stream(api, run_id, consumers=["ui"])
    for body in ({"sequence": -1}, {"sequence": "five"}, {}, {"sequence": 1, "x": 2}):
        assert_problem(await api.post(ack_url(run_id), json=body), 400, "invalid_request")
    assert_problem(await api.post(ack_url(run_id, "bad!id"), json={"sequence": 0}), 400,
                   "invalid_identifier")


async def test_acks_release_producer_credit(api: httpx.AsyncClient, run_id: str) -> None:
    await create_stream(api, run_id, credit={"max_unread_items": 2}, consumers=["ui"])
    await append(api, run_id, "s", [1, 2])
    full = await api.post(f"/runs/{run_id}/streams/s/records", json={"records": [{"payload": 3}]})
    assert_problem(full, 429, "backpressure")
    await api.post(ack_url(run_id), json={"sequence": 1})
    assert await append(api, run_id, "s", [3]) == [3]
    full_again = await api.post(f"/runs/{run_id}/streams/s/records",
                                json={"records": [{"payload": 4}]})
    assert_problem(full_again, 429, "backpressure")
