"""`data` is canonical padded base64, exactly as the OpenAPI document publishes it.

Found by `make fuzz` (the `base64_rule` target, ADR 0026): the decoder also took excess
padding (`AAAA==`), which the published pattern refuses, so a generated client and the
server disagreed on what a record is.
"""

from __future__ import annotations

import httpx
import pytest

from tests.http.support import assert_problem


@pytest.mark.parametrize("data", ["AAAA==", "AAAAAA==="])
async def test_excess_padding_is_refused_and_stores_nothing(
        api: httpx.AsyncClient, run_id: str, data: str) -> None:
    created = await api.post(f"/runs/{run_id}/streams",
                             json={"stream_id": "s", "content_class": "output.text"})
    assert created.status_code == 201
    refused = await api.post(f"/runs/{run_id}/streams/s/records",
                             json={"records": [{"data": data}]})
    assert_problem(refused, 422, "invalid_record")
    assert (await api.get(f"/runs/{run_id}/streams/s/records")).json()["records"] == []


async def test_canonical_base64_is_stored(api: httpx.AsyncClient, run_id: str) -> None:
    await api.post(f"/runs/{run_id}/streams",
                   json={"stream_id": "s", "content_class": "output.text"})
    stored = await api.post(f"/runs/{run_id}/streams/s/records",
                            json={"records": [{"data": "AAA="}, {"data": ""}]})
    assert stored.status_code == 201
