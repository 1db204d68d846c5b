"""Redaction over HTTP against a real server on Postgres (ADR 0054, 0055): every body that can
hold JSON is masked before it is stored, what cannot be masked is refused with 422
`redaction_unenforceable` naming the pin, a refused batch leaves no trace, and the raw
reasoning content class is refused as a family."""

from __future__ import annotations

import base64
import hashlib
import json
from typing import Any

import httpx
import pytest

from tests.http.support import assert_problem, create_stream

SECRET = "alice@example.com"
VALUE = {"user": {"name": "a", "email": SECRET}, "tags": [{"email": SECRET}]}
MASKED = {"mask": ["/user/email", "/tags/0/email"]}


def b64(value: Any) -> str:
    raw = value if isinstance(value, bytes) else json.dumps(value).encode()
    return base64.b64encode(raw).decode()


def stream_url(run_id: str, tail: str = "") -> str:
    return f"/runs/{run_id}/streams/s{tail}"


async def test_json_data_of_any_json_media_type_is_served_masked(api: httpx.AsyncClient,
                                                                 run_id: str) -> None:
    await create_stream(api, run_id, redaction=MASKED)
    types = ["application/json; charset=utf-8", "application/vnd.foo+json", "APPLICATION/JSON"]
    response = await api.post(stream_url(run_id, "/records"), json={"records": [
        {"data": b64(VALUE), "content_type": content_type} for content_type in types]})
    assert response.status_code == 201, response.text
    page = await api.get(stream_url(run_id, "/records"))
    assert SECRET not in page.text
    records = page.json()["records"]
    assert [record["content_type"] for record in records] == types
    for record in records:
        served = json.loads(base64.b64decode(record["data"]))
        assert served == {"user": {"name": "a", "email": "[redacted]"},
                          "tags": [{"email": "[redacted]"}]}


async def test_unmaskable_data_is_refused_naming_the_pin_and_the_batch_leaves_no_trace(
        api: httpx.AsyncClient, run_id: str) -> None:
    await create_stream(api, run_id, redaction=MASKED)
    batch = [{"payload": VALUE, "idempotency_key": "k1"},
             {"data": b64(VALUE), "content_type": "text/plain", "idempotency_key": "k2"}]
    refused = assert_problem(await api.post(stream_url(run_id, "/records"),
                                            json={"records": batch}),
                             422, "redaction_unenforceable")
    assert refused["pin"] == "redaction.mask"
    assert "redaction.allow_unmasked_bodies" in refused["detail"]
    assert (await api.get(stream_url(run_id))).json()["status"]["head"] == 0
    # Nothing of the refused batch is remembered: its keys store now, and a retry is a
    # duplicate with the same sequences.
    fixed = [batch[0], {**batch[1], "content_type": "application/json"}]
    first = await api.post(stream_url(run_id, "/records"), json={"records": fixed})
    retry = await api.post(stream_url(run_id, "/records"), json={"records": fixed})
    assert (first.status_code, retry.status_code) == (201, 200)
    assert first.json()["sequences"] == retry.json()["sequences"] == [1, 2]
    assert SECRET not in (await api.get(stream_url(run_id, "/records"))).text


async def test_json_typed_data_that_is_not_json_is_a_clear_422(api: httpx.AsyncClient,
                                                               run_id: str) -> None:
    await create_stream(api, run_id, redaction=MASKED)
    response = await api.post(stream_url(run_id, "/records"), json={"records": [
        {"data": b64(b'{"user": {"email": "' + SECRET.encode()), "content_type":
         "application/json"}]})
    problem = assert_problem(response, 422, "invalid_record")
    assert problem["field"] == "data" and "JSON" in problem["detail"]


async def test_the_opt_in_is_pinned_shown_and_keeps_other_bodies(api: httpx.AsyncClient,
                                                                 run_id: str) -> None:
    created = await create_stream(api, run_id, redaction={**MASKED,
                                                          "allow_unmasked_bodies": True})
    assert created["definition"]["redaction"] == {**MASKED, "allow_unmasked_bodies": True}
    default = await create_stream(api, run_id, "plain")
    assert default["definition"]["redaction"] == {"mask": [], "allow_unmasked_bodies": False}
    response = await api.post(stream_url(run_id, "/records"), json={"records": [
        {"data": b64(b"plain text"), "content_type": "text/plain"}]})
    assert response.status_code == 201, response.text
    for redaction, field in (({"allow_unmasked_bodies": True},
                              "redaction.allow_unmasked_bodies"),
                             ({**MASKED, "allow_unmasked_bodies": "yes"},
                              "redaction.allow_unmasked_bodies")):
        problem = assert_problem(await api.post(f"/runs/{run_id}/streams", json={
            "stream_id": "bad", "content_class": "output.text", "redaction": redaction}),
            422, "invalid_definition")
        assert problem["field"] == field
    # Pins are immutable: the same stream without the opt-in is another definition.
    conflict = await api.post(f"/runs/{run_id}/streams", json={
        "stream_id": "s", "content_class": "output.text", "redaction": MASKED})
    assert_problem(conflict, 409, "definition_conflict")


async def test_live_chunks_are_masked_or_refused(api: httpx.AsyncClient, run_id: str) -> None:
    await create_stream(api, run_id, redaction=MASKED)
    refused = await api.post(stream_url(run_id, "/live"), json={"chunks": [
        VALUE, {"content_type": "application/octet-stream", "data": b64(VALUE)}]})
    assert assert_problem(refused, 422, "redaction_unenforceable")["pin"] == "redaction.mask"
    accepted = await api.post(stream_url(run_id, "/live"), json={"chunks": [
        VALUE, {"content_type": "application/json", "data": b64(VALUE)}]})
    assert accepted.status_code == 202, accepted.text


@pytest.mark.parametrize("content_type", ["application/pdf", "application/json"])
async def test_an_object_on_a_masked_stream_is_refused_at_prepare(
        api: httpx.AsyncClient, run_id: str, content_type: str) -> None:
    await create_stream(api, run_id, redaction=MASKED)
    body = json.dumps(VALUE).encode()
    response = await api.post(stream_url(run_id, "/objects"), json={
        "idempotency_key": "o1", "sha256": hashlib.sha256(body).hexdigest(),
        "size": len(body), "content_type": content_type})
    assert assert_problem(response, 422, "redaction_unenforceable")["pin"] == "redaction.mask"


@pytest.mark.parametrize("content_class", [
    "model.reasoning.raw.v2", "model.reasoning.raw:x", "model.reasoning.raw-2",
    "Model.Reasoning.Raw_V2 ", "acme:model.reasoning.raw", "model_reasoning_raw"])
async def test_the_raw_reasoning_family_may_not_be_streamed(
        api: httpx.AsyncClient, run_id: str, content_class: str) -> None:
    response = await api.post(f"/runs/{run_id}/streams",
                              json={"stream_id": "s", "content_class": content_class})
    assert_problem(response, 422, "invalid_content_class")
    assert (await api.get(stream_url(run_id))).status_code == 404


async def test_a_word_that_starts_like_raw_reasoning_is_another_class(
        api: httpx.AsyncClient, run_id: str) -> None:
    response = await api.post(f"/runs/{run_id}/streams",
                              json={"stream_id": "s", "content_class": "model.reasoning.rawhide"})
    assert response.status_code == 201, response.text
