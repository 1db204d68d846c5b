"""The console's reads over HTTP (ADR 0046): `GET /runs` lists the token's tenant's runs
(never another tenant's, erased ones left out, keyset-paged, a bounded `limit`), `GET
…/deliveries` shows an input stream's pending deliveries, and a stream's status shows the
credit used out of its unread ceiling."""

from __future__ import annotations

import uuid
from typing import Any

import httpx

from tests.http.server import RunnelServer, bearer, token
from tests.http.support import append, assert_problem, create_stream


def tenant() -> str:
    return f"tenant-{uuid.uuid4().hex[:10]}"


def client(server: RunnelServer, secret: str) -> httpx.AsyncClient:
    return httpx.AsyncClient(base_url=server.api, headers=bearer(secret), timeout=30)


async def all_runs(api: httpx.AsyncClient, **params: str) -> list[dict[str, Any]]:
    runs: list[dict[str, Any]] = []
    cursor: str | None = None
    while True:
        query = {**params, **({"cursor": cursor} if cursor is not None else {})}
        response = await api.get("/runs", params=query)
        assert response.status_code == 200, response.text
        body = response.json()
        runs.extend(body["runs"])
        cursor = body["next_cursor"]
        if cursor is None:
            return runs


async def test_another_tenants_runs_never_show(server: RunnelServer) -> None:
    ours, theirs = tenant(), tenant()
    async with client(server, token(tenant=ours)) as mine, \
            client(server, token(tenant=theirs)) as other:
        await create_stream(mine, "shared-name")
        await create_stream(other, "shared-name", "x")
        await create_stream(other, "their-secret-run")
        assert [run["run_id"] for run in await all_runs(mine)] == ["shared-name"]
        assert [run["streams"] for run in await all_runs(mine)] == [1]
        for cursor in ("a", "shared-name", "s"):
            page = (await mine.get("/runs", params={"cursor": cursor})).json()
            assert "their-secret-run" not in str(page)
        assert [run["run_id"] for run in await all_runs(other)] == [
            "shared-name", "their-secret-run"]


async def test_runs_page_by_cursor_with_a_bounded_limit(server: RunnelServer) -> None:
    async with client(server, token(tenant=tenant())) as api:
        names = ["r-c", "r-a", "r-b", "r-e", "r-d"]
        for name in names:
            await create_stream(api, name)
        await create_stream(api, "r-a", "second")
        first = (await api.get("/runs", params={"limit": "2"})).json()
        assert [run["run_id"] for run in first["runs"]] == ["r-a", "r-b"]
        assert first["runs"][0]["streams"] == 2 and first["next_cursor"] == "r-b"
        assert first["runs"][0]["created_at"].startswith("20")
        assert [run["run_id"] for run in await all_runs(api, limit="2")] == sorted(names)
        for bad in ("0", "1001", "-1", "two", "1.5"):
            assert_problem(await api.get("/runs", params={"limit": bad}), 400, "invalid_limit")
        assert_problem(await api.get("/runs", params={"cursor": "a/b"}), 400,
                       "invalid_identifier")


async def test_erased_runs_do_not_show(server: RunnelServer) -> None:
    admin = token(tenant=tenant(), scopes=("streams:read", "streams:write", "streams:admin"))
    async with client(server, admin) as api:
        await create_stream(api, "kept")
        await create_stream(api, "gone")
        assert (await api.delete("/runs/gone")).status_code == 200
        assert [run["run_id"] for run in await all_runs(api)] == ["kept"]


async def test_a_run_bound_token_sees_only_its_runs_and_reading_needs_the_read_scope(
        server: RunnelServer) -> None:
    name = tenant()
    async with client(server, token(tenant=name)) as api:
        for run in ("r1", "r2", "r3"):
            await create_stream(api, run)
    async with client(server, token(tenant=name, runs=("r2",))) as bound:
        assert [run["run_id"] for run in await all_runs(bound, limit="1")] == ["r2"]
    async with client(server, token(tenant=name, scopes=("streams:write",))) as writer:
        assert_problem(await writer.get("/runs"), 403, "forbidden")
    assert_problem(await httpx.AsyncClient(base_url=server.api).get("/runs"), 401,
                   "unauthenticated")


async def test_deliveries_show_pending_inputs_and_none_for_an_output_stream(
        server: RunnelServer) -> None:
    async with client(server, token(tenant=tenant())) as api:
        await create_stream(api, "run", "in", direction="input")
        await create_stream(api, "run", "out")
        await append(api, "run", "in", ["approve", "reject"])  # no wait service: pending
        inputs = (await api.get("/runs/run/streams/in/deliveries")).json()
        assert inputs == {"run_id": "run", "stream_id": "in", "direction": "input",
                          "pending": 2, "dead_letter_count": 0, "dead_letters": [],
                          "redrives": []}
        outputs = (await api.get("/runs/run/streams/out/deliveries")).json()
        assert (outputs["direction"], outputs["pending"], outputs["dead_letters"]) == (
            "output", 0, [])
    async with client(server, token(tenant=tenant())) as stranger:
        assert_problem(await stranger.get("/runs/run/streams/in/deliveries"), 404,
                       "not_found")


async def test_deliveries_are_guarded_like_the_stream_they_belong_to(
        server: RunnelServer) -> None:
    """Dead letters carry the wait service's error text: only a reader of the stream sees
    them. A write-only token, a token bound to another run, a principal outside the
    stream's pinned readers, a stream's subscribe token and no token are all refused."""
    name = tenant()
    async with client(server, token(tenant=name)) as api:
        await create_stream(api, "run", "in", direction="input",
                            authorization={"readers": ["alice"], "writers": ["alice"]})
        await append(api, "run", "in", ["approve"])
        path = "/runs/run/streams/in/deliveries"
        assert (await api.get(path)).json()["pending"] == 1
        minted = (await api.post("/runs/run/streams/in/subscribe-token")).json()["token"]
    refusals = [
        (token(tenant=name, scopes=("streams:write",)), 403, "forbidden"),
        (token(tenant=name, runs=("other",)), 404, "not_found"),
        (token(tenant=name, sub="mallory"), 403, "forbidden"),
        (minted, 401, "unauthenticated"),
    ]
    for secret, status, code in refusals:
        async with client(server, secret) as caller:
            assert_problem(await caller.get(path), status, code)
    async with httpx.AsyncClient(base_url=server.api) as anonymous:
        assert_problem(await anonymous.get(path), 401, "unauthenticated")
        assert_problem(await anonymous.get(path, params={"access_token": minted}), 401,
                       "unauthenticated")


async def test_the_status_shows_the_credit_used_out_of_the_unread_ceiling(
        server: RunnelServer, api: httpx.AsyncClient, run_id: str) -> None:
    await create_stream(api, run_id, "gated", consumers=["ui"],
                        credit={"max_unread_items": 10, "max_unread_bytes": 4096})
    await create_stream(api, run_id, "free")
    await append(api, run_id, "gated", ["aaaa", "bb", "c"])
    await append(api, run_id, "free", ["aaaa"])
    before = (await api.get(f"/runs/{run_id}/streams/gated")).json()["status"]["unread"]
    assert before["items"] == 3 and before["bytes"] > 0
    ack = await api.post(f"/runs/{run_id}/streams/gated/consumers/ui/ack", json={"sequence": 1})
    assert ack.status_code == 200, ack.text
    after = (await api.get(f"/runs/{run_id}/streams/gated")).json()["status"]["unread"]
    assert after["items"] == 2 and 0 < after["bytes"] < before["bytes"]
    free = (await api.get(f"/runs/{run_id}/streams/free")).json()["status"]["unread"]
    assert free == {"items": 0, "bytes": 0}  # no declared consumer: no ceiling binds
    listed = (await api.get(f"/runs/{run_id}/streams")).json()["streams"]
    assert [stream["status"]["unread"]["items"] for stream in listed] == [0, 2]


async def test_deleted_streams_leave_the_runs_listing(server: RunnelServer) -> None:
    async with client(server, token(tenant=tenant())) as api:
        await create_stream(api, "mixed", "kept")
        await create_stream(api, "mixed", "gone")
        await create_stream(api, "all-gone", "s")
        for run_id, stream_id in (("mixed", "gone"), ("all-gone", "s")):
            deleted = await api.delete(f"/runs/{run_id}/streams/{stream_id}")
            assert deleted.status_code == 200, deleted.text
        assert [(run["run_id"], run["streams"]) for run in await all_runs(api)] == [
            ("mixed", 1)]


async def test_streams_a_reader_may_not_read_are_not_counted_for_it(
        server: RunnelServer) -> None:
    ours = tenant()
    async with client(server, token(tenant=ours)) as alice, \
            client(server, token(tenant=ours, sub="bob")) as bob, \
            client(server, token(tenant=ours, sub="root", scopes=("streams:admin",))) as admin:
        await create_stream(alice, "mixed", "open")
        await create_stream(alice, "mixed", "bobs", authorization={"readers": ["bob"]})
        await create_stream(alice, "bobs-only", "s", authorization={"readers": ["bob"]})
        listed = {user: [(run["run_id"], run["streams"]) for run in await all_runs(api)]
                  for user, api in (("alice", alice), ("bob", bob), ("admin", admin))}
        assert listed == {"alice": [("mixed", 1)],
                          "bob": [("bobs-only", 1), ("mixed", 2)],
                          "admin": [("bobs-only", 1), ("mixed", 2)]}
