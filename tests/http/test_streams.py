"""Create, list and read stream definitions over HTTP (SPEC §3, §12)."""

from __future__ import annotations

import httpx

from tests.http.support import assert_problem, create_stream

SPEC_DEFINITION = {
    "stream_id": "answer", "direction": "output", "mode": "durable",
    "content_class": "output.text",
    "credit": {"max_unread_items": 1000, "max_unread_bytes": 8388608,
               "max_total_items": 100000, "max_total_bytes": 1073741824,
               "max_open_objects": 100,
               "on_unread_full": "reject", "block_timeout_seconds": 5},
    "retention": {"max_age_seconds": None, "max_records": None},
    "expires_after_seconds": None,
    "redaction": {"mask": ["/user/email"]},
    "placement": {"metadata_home": "local", "metadata_replicas": [],
                  "object_regions": ["local"], "client_egress_regions": ["local"],
                  "log_region": "local"},
    "authorization": {"readers": ["*"], "writers": ["*"]},
    "consumers": ["ui"],
}


async def test_create_answers_201_with_every_pin_and_an_identical_recreate_answers_200(
        api: httpx.AsyncClient, run_id: str) -> None:
    created = await api.post(f"/runs/{run_id}/streams", json=SPEC_DEFINITION)
    assert created.status_code == 201, created.text
    body = created.json()
    assert set(body) == {"run_id", "stream_id", "definition", "status", "created_at"}
    assert body["run_id"] == run_id
    assert body["stream_id"] == "answer"
    # Every pin, defaults filled: the opt-in of ADR 0054 beside the mask.
    assert body["definition"] == {**SPEC_DEFINITION, "redaction": {
        "mask": ["/user/email"], "allow_unmasked_bodies": False}}
    status = body["status"]
    assert {"head": 0, "earliest": 1, "closed": False, "legal_hold": False,
            "consumers": {"ui": 0}}.items() <= status.items()
    again = await api.post(f"/runs/{run_id}/streams", json=SPEC_DEFINITION)
    assert again.status_code == 200
    assert again.json() == body


async def test_only_stream_id_and_content_class_are_required_and_defaults_are_filled(
        api: httpx.AsyncClient, run_id: str) -> None:
    body = await create_stream(api, run_id, "minimal")
    definition = body["definition"]
    assert definition["mode"] == "durable"
    assert definition["direction"] == "output"
    assert definition["credit"]["max_unread_items"] == 1000
    assert definition["authorization"] == {"readers": ["*"], "writers": ["*"]}
    assert definition["placement"]["metadata_home"] == "local"
    assert definition["placement"]["client_egress_regions"] == ["local"]
    assert body["status"]["consumers"] == {}


async def test_a_different_definition_for_the_same_stream_is_409(
        api: httpx.AsyncClient, run_id: str) -> None:
    await create_stream(api, run_id, "s")
    response = await api.post(f"/runs/{run_id}/streams",
                              json={"stream_id": "s", "content_class": "other"})
    assert_problem(response, 409, "definition_conflict")


async def test_raw_model_reasoning_may_not_be_streamed(api: httpx.AsyncClient,
                                                       run_id: str) -> None:
    response = await api.post(f"/runs/{run_id}/streams",
                              json={"stream_id": "s", "content_class": "model.reasoning.raw"})
    assert_problem(response, 422, "invalid_content_class")


async def test_an_invalid_pin_is_422_naming_the_field(api: httpx.AsyncClient,
                                                      run_id: str) -> None:
    response = await api.post(f"/runs/{run_id}/streams", json={
        "stream_id": "s", "content_class": "x", "credit": {"max_unread_items": 0}})
    body = assert_problem(response, 422, "invalid_definition")
    assert body["field"] == "credit.max_unread_items"


async def test_a_body_that_is_not_a_json_object_is_400(api: httpx.AsyncClient,
                                                       run_id: str) -> None:
    for content in (b"[1, 2]", b"{not json", b""):
        response = await api.post(f"/runs/{run_id}/streams", content=content,
                                  headers={"content-type": "application/json"})
        assert_problem(response, 400, "invalid_request")


async def test_ids_outside_the_alphabet_are_400(api: httpx.AsyncClient, run_id: str) -> None:
    bad_run = await api.post("/runs/bad!run/streams", json={"stream_id": "s",
                                                             "content_class": "x"})
    assert_problem(bad_run, 400, "invalid_identifier")
    too_long = await api.get(f"/runs/{'r' * 129}/streams")
    assert_problem(too_long, 400, "invalid_identifier")
    bad_stream = await api.post(f"/runs/{run_id}/streams",
                                json={"stream_id": "has space", "content_class": "x"})
    assert bad_stream.status_code in (400, 422)
    assert bad_stream.json()["code"].startswith("invalid_")


async def test_get_answers_the_create_shape_and_an_unknown_stream_is_404(
        api: httpx.AsyncClient, run_id: str) -> None:
    created = await create_stream(api, run_id, "s", consumers=["ui"])
    fetched = await api.get(f"/runs/{run_id}/streams/s")
    assert fetched.status_code == 200
    assert fetched.json() == created
    assert_problem(await api.get(f"/runs/{run_id}/streams/nope"), 404, "not_found")
    assert_problem(await api.get("/runs/never-created/streams/s"), 404, "not_found")


async def test_list_holds_the_runs_streams_the_caller_may_read(api: httpx.AsyncClient,
                                                              run_id: str) -> None:
    await create_stream(api, run_id, "a")
    await create_stream(api, run_id, "b")
    await create_stream(api, run_id, "bobs", authorization={"readers": ["bob"],
                                                            "writers": ["bob"]})
    response = await api.get(f"/runs/{run_id}/streams")
    assert response.status_code == 200
    body = response.json()
    assert body["run_id"] == run_id
    assert [stream["stream_id"] for stream in body["streams"]] == ["a", "b"]
    # A run exists once it has a stream.
    assert_problem(await api.get("/runs/no-such-run/streams"), 404, "not_found")


async def test_a_definition_body_over_the_limit_is_413_before_it_is_read(
        api: httpx.AsyncClient, run_id: str) -> None:
    huge = {"stream_id": "s", "content_class": "x", "padding": "p" * (70 * 1024)}
    response = await api.post(f"/runs/{run_id}/streams", json=huge)
    assert_problem(response, 413, "too_large")
