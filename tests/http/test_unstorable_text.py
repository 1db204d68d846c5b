"""Text Postgres cannot store (U+0000) is bad input, never a 500.

Found by the schemathesis run (tests/fuzz, ADR 0026): a definition with `\\u0000` in a
principal made the store's jsonb insert fail with a 500.
"""

from __future__ import annotations

import hashlib

import httpx
import pytest

from tests.http.support import assert_problem

NUL = "a\u0000b"


@pytest.mark.parametrize("text", [NUL], ids=["nul"])
@pytest.mark.parametrize("pins", [
    lambda t: {"content_class": t},
    lambda t: {"consumers": [{"id": "ui", "principals": [t]}]},
    lambda t: {"authorization": {"readers": [t], "writers": ["*"]}},
], ids=["content_class", "consumer_principal", "readers"])
async def test_a_definition_with_unstorable_text_is_refused(
        api: httpx.AsyncClient, run_id: str, text: str, pins: object) -> None:
    body = {"stream_id": "s", "content_class": "output.text", **pins(text)}  # type: ignore[operator]
    response = await api.post(f"/runs/{run_id}/streams", json=body)
    assert_problem(response, 422, "invalid_definition")
    assert (await api.get(f"/runs/{run_id}/streams/s")).status_code == 404


async def test_record_keys_and_object_pins_with_nul_are_refused(
        api: httpx.AsyncClient, run_id: str) -> None:
    created = await api.post(f"/runs/{run_id}/streams",
                             json={"stream_id": "s", "content_class": "output.text"})
    assert created.status_code == 201
    base = f"/runs/{run_id}/streams/s"
    for record, code in (({"payload": 1, "idempotency_key": NUL}, "invalid_record"),
                         ({"payload": 1, "content_type": NUL}, "invalid_content_type")):
        assert_problem(await api.post(base + "/records", json={"records": [record]}),
                       422, code)
    body = b"x"
    assert_problem(await api.post(base + "/objects", json={
        "idempotency_key": NUL, "sha256": hashlib.sha256(body).hexdigest(), "size": 1,
        "content_type": "text/plain"}), 422, "invalid_record")
    assert (await api.get(base + "/records")).json()["records"] == []
    # A payload keeps U+0000: it is stored as `json` text.
    stored = await api.post(base + "/records", json={"records": [{"payload": NUL}]})
    assert stored.status_code == 201
    assert (await api.get(base + "/records")).json()["records"][0]["payload"] == NUL
