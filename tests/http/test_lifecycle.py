"""Close, legal hold and run erasure over HTTP."""

from __future__ import annotations

import httpx

from tests.http.server import bearer, token
from tests.http.support import append, assert_problem, create_stream

ADMIN = bearer(token(sub="root", scopes=("streams:read", "streams:write", "streams:admin")))


async def test_close_is_idempotent_and_reports_the_head(api: httpx.AsyncClient,
                                                        run_id: str) -> None:
    await create_stream(api, run_id)
    await append(api, run_id, "s", [1, 2])
    first = await api.post(f"/runs/{run_id}/streams/s/close")
    assert (first.status_code, first.json()) == (200, {"closed": True, "head": 2})
    again = await api.post(f"/runs/{run_id}/streams/s/close")
    assert (again.status_code, again.json()) == (200, {"closed": True, "head": 2})
    status = (await api.get(f"/runs/{run_id}/streams/s")).json()["status"]
    assert status["closed"] is True
    assert (await api.get(f"/runs/{run_id}/streams/s/records")).json()["closed"] is True


async def test_legal_hold_needs_the_admin_scope_and_shows_in_the_status(
        api: httpx.AsyncClient, run_id: str) -> None:
    await create_stream(api, run_id)
    url = f"/runs/{run_id}/streams/s/legal-hold"
    refused = await api.put(url, json={"held": True, "reason": "litigation"})
    assert_problem(refused, 403, "forbidden")
    placed = await api.put(url, json={"held": True, "reason": "litigation"}, headers=ADMIN)
    assert (placed.status_code, placed.json()) == (200, {"held": True, "reason": "litigation"})
    assert (await api.get(f"/runs/{run_id}/streams/s")).json()["status"]["legal_hold"] is True
    lifted = await api.put(url, json={"held": False}, headers=ADMIN)
    assert (lifted.status_code, lifted.json()) == (200, {"held": False, "reason": None})
    assert_problem(await api.put(url, json={"held": "maybe"}, headers=ADMIN), 400,
                   "invalid_request")


async def test_erasing_a_run_reports_counts_spares_held_streams_and_stores_nothing_after(
        api: httpx.AsyncClient, run_id: str) -> None:
    await create_stream(api, run_id, "a")
    await create_stream(api, run_id, "held")
    await append(api, run_id, "a", [1, 2, 3])
    await append(api, run_id, "held", [1])
    await api.put(f"/runs/{run_id}/streams/held/legal-hold", json={"held": True}, headers=ADMIN)

    assert_problem(await api.delete(f"/runs/{run_id}"), 403, "forbidden")
    erased = await api.delete(f"/runs/{run_id}", headers=ADMIN)
    assert erased.status_code == 200
    assert erased.json() == {"streams": 2, "records_deleted": 3, "objects_deleted": 0,
                             "held_streams": ["held"], "elsewhere": []}

    # The erased records are gone: a reader from the start is told to resync past them.
    gone = assert_problem(await api.get(f"/runs/{run_id}/streams/a/records"), 410,
                          "cursor_pruned")
    assert (gone["earliest"], gone["latest"]) == (4, 3)
    kept = await api.get(f"/runs/{run_id}/streams/held/records")
    assert [r["payload"] for r in kept.json()["records"]] == [1]
    refused = await api.post(f"/runs/{run_id}/streams/a/records",
                             json={"records": [{"payload": 4}]})
    assert_problem(refused, 410, "run_erased")
    create = await api.post(f"/runs/{run_id}/streams", json={"stream_id": "new",
                                                             "content_class": "x"})
    assert_problem(create, 410, "run_erased")
