"""Deleting one stream over HTTP (docs/adr/0075): counts, a tombstone that answers 404, an
id that is never reused, legal hold, who may, and open follows that end."""

from __future__ import annotations

import asyncio
import json

import httpx
from httpx_sse import aconnect_sse

from tests.http.objects_support import prepare
from tests.http.server import RunnelServer, bearer, token
from tests.http.support import GUARD_SECONDS, append, assert_problem, create_stream

ADMIN = bearer(token(sub="root", scopes=("streams:read", "streams:write", "streams:admin")))
OTHER_ADMIN = bearer(token(tenant="t2", sub="root",
                           scopes=("streams:read", "streams:write", "streams:admin")))
READ_ONLY = bearer(token(sub="viewer", scopes=("streams:read",)))
OTHER_WRITER = bearer(token(sub="bob"))


async def committed_object(api: httpx.AsyncClient, run_id: str, body: bytes) -> None:
    prepared = await prepare(api, run_id, body)
    assert (await api.put(absolute_path(prepared["upload_url"]), content=body)).status_code \
        == 200
    commit = await api.post(f"/runs/{run_id}/streams/s/objects/{prepared['object_id']}/commit")
    assert commit.status_code == 201, commit.text


def absolute_path(url: str) -> str:
    """The upload URL below the client's API prefix."""
    return url.removeprefix("/api/workflow-streams")


async def test_delete_reports_counts_then_the_stream_is_gone_for_every_route(
        api: httpx.AsyncClient, run_id: str) -> None:
    await create_stream(api, run_id)
    await create_stream(api, run_id, "kept")
    await append(api, run_id, "s", [1, 2, 3])
    await committed_object(api, run_id, b"object body")
    url = f"/runs/{run_id}/streams/s"

    deleted = await api.delete(url, headers=ADMIN)
    assert (deleted.status_code, deleted.json()) == (200, {
        "run_id": run_id, "stream_id": "s", "deleted": True, "records_deleted": 4,
        "objects_deleted": 1})

    assert_problem(await api.get(url), 404, "not_found")
    assert_problem(await api.get(url + "/records"), 404, "not_found")
    assert_problem(await api.get(url + "/subscribe"), 404, "not_found")
    assert_problem(await api.post(url + "/records", json={"records": [{"payload": 4}]}),
                   404, "not_found")
    assert_problem(await api.post(url + "/close"), 404, "not_found")
    assert_problem(await api.post(url + "/subscribe-token"), 404, "not_found")
    listed = (await api.get(f"/runs/{run_id}/streams")).json()
    assert [stream["stream_id"] for stream in listed["streams"]] == ["kept"]

    # A retry after a lost answer is safe: the same shape, nothing more deleted.
    again = await api.delete(url, headers=ADMIN)
    assert (again.status_code, again.json()) == (200, {
        "run_id": run_id, "stream_id": "s", "deleted": True, "records_deleted": 0,
        "objects_deleted": 0})
    assert_problem(await api.delete(f"/runs/{run_id}/streams/never", headers=ADMIN), 404,
                   "not_found")


async def test_the_id_of_a_deleted_stream_is_never_reused(api: httpx.AsyncClient,
                                                          run_id: str) -> None:
    await create_stream(api, run_id)
    await append(api, run_id, "s", [1, 2])
    assert (await api.delete(f"/runs/{run_id}/streams/s", headers=ADMIN)).status_code == 200
    recreated = await api.post(f"/runs/{run_id}/streams",
                               json={"stream_id": "s", "content_class": "output.text"})
    assert assert_problem(recreated, 409, "stream_deleted")["stream_id"] == "s"
    assert_problem(await api.get(f"/runs/{run_id}/streams/s/records?after=2"), 404,
                   "not_found")


async def test_a_held_stream_is_refused_until_released(api: httpx.AsyncClient,
                                                       run_id: str) -> None:
    await create_stream(api, run_id)
    await append(api, run_id, "s", [1])
    hold = f"/runs/{run_id}/streams/s/legal-hold"
    await api.put(hold, json={"held": True, "reason": "litigation"}, headers=ADMIN)
    assert_problem(await api.delete(f"/runs/{run_id}/streams/s", headers=ADMIN), 409,
                   "legal_hold")
    page = (await api.get(f"/runs/{run_id}/streams/s/records")).json()
    assert [record["payload"] for record in page["records"]] == [1]
    await api.put(hold, json={"held": False}, headers=ADMIN)
    deleted = await api.delete(f"/runs/{run_id}/streams/s", headers=ADMIN)
    assert (deleted.status_code, deleted.json()["records_deleted"]) == (200, 1)


async def test_readers_other_writers_and_other_tenants_may_not_and_leave_no_trace(
        api: httpx.AsyncClient, run_id: str) -> None:
    await create_stream(api, run_id, authorization={"readers": ["*"], "writers": ["alice"]})
    await append(api, run_id, "s", [1, 2])
    url = f"/runs/{run_id}/streams/s"
    assert_problem(await api.delete(url, headers=OTHER_WRITER), 403, "forbidden")
    assert_problem(await api.delete(url, headers=READ_ONLY), 403, "forbidden")
    assert_problem(await api.delete(url, headers=OTHER_ADMIN), 404, "not_found")
    status = (await api.get(url)).json()["status"]
    assert (status["head"], status["earliest"], status["closed"]) == (2, 1, False)
    assert await append(api, run_id, "s", [3]) == [3]
    deleted = await api.delete(url)  # alice, its writer
    assert (deleted.status_code, deleted.json()["records_deleted"]) == (200, 3)


async def test_an_open_follow_ends_when_its_stream_is_deleted(
        server: RunnelServer, api: httpx.AsyncClient, run_id: str) -> None:
    await create_stream(api, run_id)
    await append(api, run_id, "s", [1, 2])
    events = []
    async with asyncio.timeout(GUARD_SECONDS), aconnect_sse(
            api, "GET", f"/runs/{run_id}/streams/s/subscribe") as source:
        async for event in source.aiter_sse():
            events.append(event)
            if event.event == "record" and event.id == "2":
                deleted = await api.delete(f"/runs/{run_id}/streams/s", headers=ADMIN)
                assert deleted.status_code == 200
    # The stream ended cleanly: every record, then `end` (the server closed the response).
    assert [event.id for event in events if event.event == "record"] == ["1", "2"]
    assert events[-1].event == "end"
    assert json.loads(events[-1].data) == {"reason": "closed", "last_sequence": 2}


async def test_an_expired_stream_is_not_found_and_its_id_is_spent(
        api: httpx.AsyncClient, run_id: str) -> None:
    invalid = await api.post(f"/runs/{run_id}/streams", json={
        "stream_id": "s", "content_class": "output.text", "expires_after_seconds": 0})
    assert assert_problem(invalid, 422, "invalid_definition")["field"] == \
        "expires_after_seconds"
    body = await create_stream(api, run_id, expires_after_seconds=1)
    assert body["definition"]["expires_after_seconds"] == 1
    await append(api, run_id, "s", [1])
    url = f"/runs/{run_id}/streams/s"
    # The server's clock is its own: wait (bounded) for the one second to pass.
    async with asyncio.timeout(GUARD_SECONDS):
        while (await api.get(url)).status_code == 200:
            await asyncio.sleep(0.2)
    assert_problem(await api.get(url), 404, "not_found")
    assert_problem(await api.get(url + "/records"), 404, "not_found")
    assert_problem(await api.post(url + "/records", json={"records": [{"payload": 2}]}),
                   404, "not_found")
    recreated = await api.post(f"/runs/{run_id}/streams", json={
        "stream_id": "s", "content_class": "output.text", "expires_after_seconds": 1})
    assert_problem(recreated, 409, "stream_deleted")


async def test_appends_racing_a_delete_were_erased_with_it_or_refused(
        api: httpx.AsyncClient, run_id: str) -> None:
    await create_stream(api, run_id)
    url = f"/runs/{run_id}/streams/s"
    stored: list[int] = []

    async def producer(name: int) -> None:
        """Appends one record at a time until the stream is not found."""
        for n in range(10_000):
            response = await api.post(url + "/records",
                                      json={"records": [{"payload": [name, n]}]})
            if response.status_code == 404:
                return
            assert response.status_code == 201, response.text
            stored.append(response.json()["sequences"][0])

    producers = [asyncio.create_task(producer(name)) for name in range(4)]
    async with asyncio.timeout(GUARD_SECONDS):
        while len(stored) < 20:
            await asyncio.sleep(0.01)
        deleted = await api.delete(url, headers=ADMIN)
        await asyncio.gather(*producers)
    assert deleted.status_code == 200
    # Every append answered 201 committed before the delete and is counted by it; every
    # one after it was refused: no record survives the delete, none is stored after it.
    assert deleted.json()["records_deleted"] == len(stored)
    assert sorted(stored) == list(range(1, len(stored) + 1))
    assert_problem(await api.get(url + "/records"), 404, "not_found")
