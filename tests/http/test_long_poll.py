"""Long-polled record pages over HTTP (docs/adr/0076): `?wait=` answers at once when there
is something above the cursor, else once a record or the close comes, or after `wait`."""

from __future__ import annotations

import asyncio

import httpx
import pytest

from tests.http.support import GUARD_SECONDS, append, assert_problem, create_stream


async def test_a_waiting_read_answers_the_record_appended_meanwhile(
        api: httpx.AsyncClient, run_id: str) -> None:
    await create_stream(api, run_id)
    await append(api, run_id, "s", [1])
    url = f"/runs/{run_id}/streams/s/records"
    at_once = (await api.get(url, params={"after": "0", "wait": "30"})).json()
    assert [record["payload"] for record in at_once["records"]] == [1]

    waiting = asyncio.create_task(api.get(url, params={"after": "1", "wait": "30"}))
    # Append until the waiting read answers: the first append may land before it waits
    # (then it answers at once); either way it answers with records, never empty.
    async with asyncio.timeout(GUARD_SECONDS):
        n = 2
        while not waiting.done():
            await append(api, run_id, "s", [n])
            n += 1
            await asyncio.wait([waiting], timeout=0.2)
    page = (await waiting).json()
    assert page["records"] and page["records"][0]["sequence"] == 2
    assert page["next_cursor"] == page["records"][-1]["sequence"]


async def test_a_waiting_read_answers_the_close_and_an_idle_one_its_empty_page(
        api: httpx.AsyncClient, run_id: str) -> None:
    await create_stream(api, run_id)
    url = f"/runs/{run_id}/streams/s/records"
    idle = await api.get(url, params={"wait": "0.2"})
    assert (idle.status_code, idle.json()["records"], idle.json()["closed"]) == \
        (200, [], False)
    waiting = asyncio.create_task(api.get(url, params={"wait": "30"}))
    async with asyncio.timeout(GUARD_SECONDS):
        while not waiting.done():
            await api.post(f"/runs/{run_id}/streams/s/close")
            await asyncio.wait([waiting], timeout=0.2)
    page = (await waiting).json()
    assert (page["records"], page["closed"], page["next_cursor"]) == ([], True, 0)


@pytest.mark.parametrize("wait", ["abc", "-1", "31", "1e3", "nan", "", "30.0000001"])
async def test_a_wait_that_is_not_a_number_of_seconds_up_to_30_is_400(
        api: httpx.AsyncClient, run_id: str, wait: str) -> None:
    await create_stream(api, run_id)
    refused = await api.get(f"/runs/{run_id}/streams/s/records", params={"wait": wait})
    assert assert_problem(refused, 400, "invalid_wait")["field"] == "wait"
