"""Inputs a server must refuse, and the bounds it sets on what a client declares
(ADR 0025): content classes, media types, credit ceilings, streams per
run, the run listing's pages, the object receipt, and the API docs page."""

from __future__ import annotations

import re
from typing import Any

import httpx

from tests.http.objects_support import digest, objects_url, pins
from tests.http.server import RunnelServer, bearer, token
from tests.http.support import assert_problem, create_stream

CEILING = 2 * 1024**3
SERVER_ENV = {"RUNNEL_MAX_STREAMS_PER_RUN": "3",
              "RUNNEL_MAX_TOTAL_BYTES_CEILING": str(CEILING)}
BOB = bearer(token(sub="bob"))
ADMIN = bearer(token(sub="root", scopes=("streams:admin",)))


def streams(run_id: str) -> str:
    return f"/runs/{run_id}/streams"


# -- content classes ----------------------------------------------------------------


async def test_raw_reasoning_in_disguise_is_refused_and_leaves_no_stream(
        api: httpx.AsyncClient, run_id: str) -> None:
    for spelling in ("model.reasoning.raw ", "model.reasoning.raw\n", "model.reasoning\u200b.raw",
                     "ｍｏｄｅｌ.ｒｅａｓｏｎｉｎｇ.ｒａｗ"):
        refused = await api.post(streams(run_id), json={"stream_id": "s",
                                                        "content_class": spelling})
        assert_problem(refused, 422, "invalid_content_class")
    assert_problem(await api.get(f"{streams(run_id)}/s"), 404, "not_found")


async def test_a_content_class_is_pinned_normalised(api: httpx.AsyncClient, run_id: str) -> None:
    created = await api.post(streams(run_id), json={"stream_id": "s",
                                                    "content_class": " Output.Text\n"})
    assert created.status_code == 201, created.text
    assert created.json()["definition"]["content_class"] == "output.text"
    again = await api.post(streams(run_id), json={"stream_id": "s",
                                                  "content_class": "output.text"})
    assert again.status_code == 200, again.text  # the same class: an identical re-create
    odd = await api.post(streams(run_id), json={"stream_id": "t",
                                                "content_class": "output text"})
    assert_problem(odd, 422, "invalid_definition")


# -- media types --------------------------------------------------------------------


async def test_an_object_content_type_with_a_line_break_is_refused_at_prepare(
        api: httpx.AsyncClient, run_id: str) -> None:
    await create_stream(api, run_id)
    for bad in ("text/plain\r\nX-Injected: 1", "text/plain\n", "text", "text/plain; a",
                "tëxt/plain", "a/" + "b" * 300):
        refused = await api.post(objects_url(run_id), json=pins(b"body", content_type=bad))
        body = assert_problem(refused, 422, "invalid_content_type")
        assert body["field"] == "content_type"
    # Nothing was kept: the same key now prepares a new intent (201, not 200 or 409).
    prepared = await api.post(objects_url(run_id),
                              json=pins(b"body", content_type='text/plain; charset="utf-8"'))
    assert prepared.status_code == 201, prepared.text


async def test_a_well_formed_media_type_is_served_back_on_download(
        api: httpx.AsyncClient, server: RunnelServer, run_id: str) -> None:
    await create_stream(api, run_id)
    body = b"hello, objects"
    prepared = (await api.post(objects_url(run_id), json=pins(
        body, content_type="text/plain; charset=utf-8"))).json()
    url = f"{objects_url(run_id)}/{prepared['object_id']}"
    assert (await api.put(url + "/body", content=body)).status_code == 200
    assert (await api.post(url + "/commit")).status_code == 201
    download = await api.get(url + "/body")
    assert download.status_code == 200 and download.content == body
    assert download.headers["content-type"] == "text/plain; charset=utf-8"


async def test_a_record_content_type_must_be_a_media_type_too(
        api: httpx.AsyncClient, run_id: str) -> None:
    await create_stream(api, run_id)
    url = f"{streams(run_id)}/s/records"
    refused = await api.post(url, json={"records": [
        {"payload": 1}, {"data": "AA==", "content_type": "application/x\r\nSet-Cookie: a=b"}]})
    assert_problem(refused, 422, "invalid_content_type")
    assert (await api.get(f"{streams(run_id)}/s")).json()["status"]["head"] == 0
    stored = await api.post(url, json={"records": [
        {"data": "AA==", "content_type": "application/vnd.example+json; v=2"}]})
    assert stored.status_code == 201, stored.text


# -- credit ceilings and streams per run --------------------------------------------


async def test_credit_pins_above_the_servers_ceilings_are_refused(
        api: httpx.AsyncClient, run_id: str) -> None:
    for credit, field in (({"max_total_bytes": 10**30}, "credit.max_total_bytes"),
                          ({"max_total_bytes": CEILING + 1}, "credit.max_total_bytes"),
                          ({"max_unread_bytes": 10**19}, "credit.max_unread_bytes"),
                          ({"max_total_items": 10**12}, "credit.max_total_items")):
        refused = await api.post(streams(run_id), json={
            "stream_id": "s", "content_class": "x", "credit": credit})
        assert assert_problem(refused, 422, "invalid_definition")["field"] == field, credit
    assert_problem(await api.get(streams(run_id)), 404, "not_found")  # nothing was created
    at_ceiling = await create_stream(api, run_id, credit={"max_total_bytes": CEILING})
    assert at_ceiling["definition"]["credit"]["max_total_bytes"] == CEILING


async def test_a_run_holds_at_most_the_configured_number_of_streams(
        api: httpx.AsyncClient, run_id: str) -> None:
    for name in ("a", "b", "c"):
        await create_stream(api, run_id, name)
    refused = await api.post(streams(run_id), json={"stream_id": "d", "content_class": "x"})
    assert assert_problem(refused, 409, "too_many_streams")["limit"] == 3
    again = await api.post(streams(run_id), json={"stream_id": "a",
                                                  "content_class": "output.text"})
    assert again.status_code == 200, again.text  # an existing stream is still answered
    assert_problem(await api.get(f"{streams(run_id)}/d"), 404, "not_found")
    await create_stream(api, run_id + "-other", "d")  # another run has its own count


# -- the run listing ----------------------------------------------------------------


async def test_the_run_listing_is_paged_with_a_cursor(api: httpx.AsyncClient,
                                                      run_id: str) -> None:
    for name in ("c", "a", "b"):
        await create_stream(api, run_id, name)
    first = await api.get(streams(run_id), params={"limit": 2})
    assert first.status_code == 200, first.text
    page = first.json()
    assert page["run_id"] == run_id
    assert [s["stream_id"] for s in page["streams"]] == ["a", "b"]
    assert page["next_cursor"] == "b"
    rest = (await api.get(streams(run_id), params={"limit": 2, "cursor": "b"})).json()
    assert ([s["stream_id"] for s in rest["streams"]], rest["next_cursor"]) == (["c"], None)
    whole = (await api.get(streams(run_id))).json()
    assert ([s["stream_id"] for s in whole["streams"]], whole["next_cursor"]) == (
        ["a", "b", "c"], None)
    for limit in ("0", "1001", "x"):
        assert_problem(await api.get(streams(run_id), params={"limit": limit}), 400,
                       "invalid_limit")
    assert_problem(await api.get(streams(run_id), params={"cursor": "../x"}), 400,
                   "invalid_identifier")
    assert_problem(await api.get(streams(run_id + "-none"), params={"cursor": "a"}), 404,
                   "not_found")


# -- the object receipt -------------------------------------------------------------


async def state_of(api: httpx.AsyncClient, url: str) -> str:
    state: str = (await api.get(url)).json()["state"]
    return state


async def test_only_the_preparing_principal_or_an_admin_finishes_an_upload(
        api: httpx.AsyncClient, run_id: str) -> None:
    await create_stream(api, run_id)
    body = b"alice's body"
    prepared = (await api.post(objects_url(run_id), json=pins(body))).json()
    url = f"{objects_url(run_id)}/{prepared['object_id']}"

    for method, tail, content in (("PUT", "/body", body), ("POST", "/commit", None),
                                  ("POST", "/abort", None)):
        refused = await api.request(method, url + tail, content=content, headers=BOB)
        assert_problem(refused, 403, "not_intent_owner")
    assert await state_of(api, url) == "prepared"  # untouched
    assert_problem(await api.post(objects_url(run_id), json=pins(body), headers=BOB), 403,
                   "not_intent_owner")

    assert (await api.put(url + "/body", content=body)).status_code == 200
    assert_problem(await api.post(url + "/commit", headers=BOB), 403, "not_intent_owner")
    assert await state_of(api, url) == "uploaded"
    committed = await api.post(url + "/commit", headers=ADMIN)  # an admin may
    assert committed.status_code == 201, committed.text

    other = (await api.post(objects_url(run_id), json=pins(b"other", "o2"))).json()
    aborted = await api.post(f"{objects_url(run_id)}/{other['object_id']}/abort", headers=ADMIN)
    assert (aborted.status_code, aborted.json()) == (200, {"state": "aborted"})


async def test_another_principals_intent_is_still_readable_by_readers(
        api: httpx.AsyncClient, run_id: str) -> None:
    await create_stream(api, run_id)
    prepared = (await api.post(objects_url(run_id), json=pins(b"x"))).json()
    seen = await api.get(f"{objects_url(run_id)}/{prepared['object_id']}", headers=BOB)
    assert (seen.status_code, seen.json()["sha256"]) == (200, digest(b"x"))


# -- the API docs page --------------------------------------------------------------


def test_the_api_docs_page_needs_no_third_party_network(server: RunnelServer) -> None:
    page = httpx.get(server.url + "/schema")
    assert page.status_code == 200
    assert page.headers["content-type"].startswith("text/html")
    assert re.search(r"https?://|//[a-z0-9.-]+\.[a-z]{2,}/", page.text, re.IGNORECASE) is None
    assert "<script" not in page.text.lower()
    assert "default-src 'none'" in page.headers["content-security-policy"]
    assert "/api/workflow-streams/runs/{run_id}/streams" in page.text
    document = httpx.get(server.url + "/schema/openapi.json")
    assert document.status_code == 200
    assert document.json()["info"]["title"] == "Runnel"


# -- already on main, kept by a test each -------------------------------------------


async def test_erasing_a_run_that_never_existed_is_404_and_leaves_the_id_usable(
        api: httpx.AsyncClient, run_id: str) -> None:
    assert_problem(await api.delete(f"/runs/{run_id}", headers=ADMIN), 404, "not_found")
    created = await api.post(streams(run_id), json={"stream_id": "s", "content_class": "x"})
    assert created.status_code == 201, created.text


async def test_an_admin_manages_but_reads_no_content_past_the_readers_pin(
        api: httpx.AsyncClient, run_id: str) -> None:
    await create_stream(api, run_id, authorization={"readers": ["alice"], "writers": ["*"]})
    url = f"{streams(run_id)}/s"
    assert (await api.post(url + "/records", json={"records": [{"payload": 1}]})
            ).status_code == 201
    assert (await api.get(url, headers=ADMIN)).json()["status"]["head"] == 1  # status: yes
    assert_problem(await api.get(url + "/records", headers=ADMIN), 403, "forbidden")
    assert_problem(await api.get(url + "/subscribe", headers=ADMIN), 403, "forbidden")
    held: Any = await api.put(url + "/legal-hold", json={"held": True}, headers=ADMIN)
    assert held.status_code == 200
    assert (await api.post(url + "/close", headers=ADMIN)).status_code == 200
