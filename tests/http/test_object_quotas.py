"""Objects over HTTP obey the stream's totals: a body reserves its declared size at prepare
(409 `quota_exhausted` when it cannot fit), and open intents are bounded."""

from __future__ import annotations

import httpx

from tests.http.objects_support import objects_url, pins, prepare
from tests.http.support import assert_problem, create_stream


async def test_a_body_beyond_the_total_bytes_is_409_at_prepare_and_leaves_nothing(
        api: httpx.AsyncClient, run_id: str) -> None:
    await create_stream(api, run_id, credit={"max_total_bytes": 1000})
    refused = await api.post(objects_url(run_id), json=pins(b"x" * 200_000))
    body = assert_problem(refused, 409, "quota_exhausted")
    assert body["max_total_bytes"] == 1000
    again = await api.post(objects_url(run_id), json=pins(b"x" * 500))
    assert again.status_code == 201, again.text


async def test_open_intents_past_the_pinned_ceiling_are_409(api: httpx.AsyncClient,
                                                             run_id: str) -> None:
    await create_stream(api, run_id, credit={"max_open_objects": 1})
    first = await prepare(api, run_id, b"one", "o1")
    assert_problem(await api.post(objects_url(run_id), json=pins(b"two", "o2")), 409,
                   "quota_exhausted")
    aborted = await api.post(f"{objects_url(run_id)}/{first['object_id']}/abort")
    assert aborted.status_code == 200, aborted.text
    await prepare(api, run_id, b"two", "o2")
