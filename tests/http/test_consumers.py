"""Acknowledgements over HTTP: they only advance, belong to one principal, and feed credit."""

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


async def test_only_the_principal_that_first_acked_may_move_a_consumer(
        api: httpx.AsyncClient, server: object, run_id: str) -> None:
    await create_stream(api, run_id)
    await append(api, run_id, "s", [1, 2])
    assert (await api.post(ack_url(run_id, "mine"), json={"sequence": 1})).status_code == 200
    bob = bearer(token(sub="bob"))
    response = await api.post(ack_url(run_id, "mine"), json={"sequence": 2}, headers=bob)
    assert_problem(response, 403, "consumer_scope")
    assert (await api.post(ack_url(run_id, "bobs"), json={"sequence": 2},
                           headers=bob)).status_code == 200


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
