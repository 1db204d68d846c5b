"""Append batches and read pages over HTTP (SPEC §3, §5, §12)."""

from __future__ import annotations

import base64

import httpx

from tests.http.support import append, assert_problem, create_stream

SERVER_ENV = {"RUNNEL_MAX_APPEND_BODY_BYTES": str(256 * 1024)}


def records_url(run_id: str, stream_id: str = "s") -> str:
    return f"/runs/{run_id}/streams/{stream_id}/records"


async def head_of(api: httpx.AsyncClient, run_id: str, stream_id: str = "s") -> int:
    response = await api.get(f"/runs/{run_id}/streams/{stream_id}")
    head: int = response.json()["status"]["head"]
    return head


async def test_append_answers_201_with_consecutive_sequences_and_read_pages_above_the_cursor(
        api: httpx.AsyncClient, run_id: str) -> None:
    await create_stream(api, run_id)
    assert await append(api, run_id, "s", [1, 2, 3, 4]) == [1, 2, 3, 4]
    response = await api.post(records_url(run_id), json={"records": [
        {"payload": {"n": 5}, "idempotency_key": "k1"},
        {"data": base64.b64encode(b"\x00\x01binary").decode(),
         "content_type": "application/octet-stream"}]})
    assert response.status_code == 201
    assert response.json() == {"sequences": [5, 6], "head": 6, "duplicates": []}

    page = await api.get(records_url(run_id), params={"after": 4, "limit": 1})
    assert page.status_code == 200
    body = page.json()
    assert set(body) == {"records", "next_cursor", "head", "earliest", "closed"}
    assert (body["next_cursor"], body["head"], body["earliest"], body["closed"]) == (5, 6, 1,
                                                                                     False)
    [record] = body["records"]
    assert record["sequence"] == 5
    assert record["content_type"] == "application/json"
    assert record["payload"] == {"n": 5}
    assert record["idempotency_key"] == "k1"
    assert isinstance(record["appended_at"], str)

    rest = (await api.get(records_url(run_id), params={"after": 5})).json()
    [binary] = rest["records"]
    assert binary["sequence"] == 6
    assert base64.b64decode(binary["data"]) == b"\x00\x01binary"
    assert binary["content_type"] == "application/octet-stream"
    assert "payload" not in binary


async def test_a_page_holds_exactly_the_records_above_the_cursor(api: httpx.AsyncClient,
                                                                run_id: str) -> None:
    await create_stream(api, run_id)
    await append(api, run_id, "s", list(range(150)))
    default = (await api.get(records_url(run_id))).json()
    assert [r["sequence"] for r in default["records"]] == list(range(1, 101))
    assert default["next_cursor"] == 100
    after = (await api.get(records_url(run_id), params={"after": 100, "limit": 1000})).json()
    assert [r["sequence"] for r in after["records"]] == list(range(101, 151))
    at_head = (await api.get(records_url(run_id), params={"after": 150})).json()
    assert at_head["records"] == []
    assert at_head["next_cursor"] == 150


async def test_repeated_idempotency_keys_return_the_original_sequences(
        api: httpx.AsyncClient, run_id: str) -> None:
    await create_stream(api, run_id)
    batch = {"records": [{"payload": "a", "idempotency_key": "ka"},
                         {"payload": "b", "idempotency_key": "kb"}]}
    first = await api.post(records_url(run_id), json=batch)
    assert (first.status_code, first.json()) == (201, {"sequences": [1, 2], "head": 2,
                                                     "duplicates": []})
    replay = await api.post(records_url(run_id), json=batch)
    assert (replay.status_code, replay.json()) == (200, {"sequences": [1, 2], "head": 2,
                                                       "duplicates": [0, 1]})
    mixed = await api.post(records_url(run_id), json={"records": [
        {"payload": "b", "idempotency_key": "kb"}, {"payload": "c", "idempotency_key": "kc"}]})
    assert (mixed.status_code, mixed.json()) == (201, {"sequences": [2, 3], "head": 3,
                                                     "duplicates": [0]})
    stored = (await api.get(records_url(run_id))).json()["records"]
    assert [r["payload"] for r in stored] == ["a", "b", "c"]


async def test_an_inline_record_over_64_kib_is_413_and_nothing_of_the_batch_is_stored(
        api: httpx.AsyncClient, run_id: str) -> None:
    await create_stream(api, run_id)
    response = await api.post(records_url(run_id), json={"records": [
        {"payload": "small"}, {"payload": "x" * (64 * 1024)}]})
    assert_problem(response, 413, "too_large")
    binary = await api.post(records_url(run_id), json={"records": [
        {"data": base64.b64encode(b"\x00" * (64 * 1024 + 1)).decode()}]})
    assert_problem(binary, 413, "too_large")
    assert await head_of(api, run_id) == 0


async def test_an_append_body_over_the_route_limit_is_413(api: httpx.AsyncClient,
                                                          run_id: str) -> None:
    await create_stream(api, run_id)
    response = await api.post(records_url(run_id), json={"records": [
        {"payload": "y" * 60_000} for _ in range(5)]})
    assert_problem(response, 413, "too_large")
    assert await head_of(api, run_id) == 0


async def test_malformed_records_are_refused_and_nothing_is_stored(api: httpx.AsyncClient,
                                                                   run_id: str) -> None:
    await create_stream(api, run_id)
    for records in ([], [{"payload": 1, "data": "AA=="}], [{"pay": 1}], [{"data": "***"}],
                    [{"payload": 1, "idempotency_key": ""}]):
        response = await api.post(records_url(run_id), json={"records": records})
        assert_problem(response, 422, "invalid_record")
    for body in ({"records": "nope"}, {"records": [], "extra": 1}, {}):
        assert_problem(await api.post(records_url(run_id), json=body), 400, "invalid_request")
    assert await head_of(api, run_id) == 0


async def test_redaction_masks_pinned_paths_before_the_record_is_stored(
        api: httpx.AsyncClient, run_id: str) -> None:
    await create_stream(api, run_id, redaction={"mask": ["/user/email"]})
    await append(api, run_id, "s", [{"user": {"email": "a@example.com", "name": "A"}}])
    [record] = (await api.get(records_url(run_id))).json()["records"]
    assert record["payload"]["user"]["name"] == "A"
    assert record["payload"]["user"]["email"] != "a@example.com"


async def test_append_to_a_closed_stream_is_409(api: httpx.AsyncClient, run_id: str) -> None:
    await create_stream(api, run_id)
    await append(api, run_id, "s", [1])
    assert (await api.post(f"/runs/{run_id}/streams/s/close")).status_code == 200
    response = await api.post(records_url(run_id), json={"records": [{"payload": 2}]})
    assert_problem(response, 409, "stream_closed")
    assert await head_of(api, run_id) == 1


async def test_reaching_the_total_ceiling_is_409_quota_exhausted_with_nothing_appended(
        api: httpx.AsyncClient, run_id: str) -> None:
    await create_stream(api, run_id, credit={"max_total_items": 3})
    await append(api, run_id, "s", [1, 2])
    response = await api.post(records_url(run_id), json={"records": [{"payload": 3},
                                                                      {"payload": 4}]})
    assert_problem(response, 409, "quota_exhausted")
    assert await head_of(api, run_id) == 2


async def test_a_full_unread_ceiling_is_429_with_retry_after(api: httpx.AsyncClient,
                                                             run_id: str) -> None:
    await create_stream(api, run_id, credit={"max_unread_items": 2}, consumers=["ui"])
    await append(api, run_id, "s", [1, 2])
    response = await api.post(records_url(run_id), json={"records": [{"payload": 3}]})
    assert_problem(response, 429, "backpressure")
    assert int(response.headers["retry-after"]) >= 1
    assert await head_of(api, run_id) == 2


async def test_cursors_are_parsed_strictly(api: httpx.AsyncClient, run_id: str) -> None:
    await create_stream(api, run_id)
    await append(api, run_id, "s", [1, 2])
    future = await api.get(records_url(run_id), params={"after": 3})
    assert_problem(future, 400, "future_cursor")
    for garbage in ("abc", "-1", "1.5", "", "9" * 30, "0x10"):
        response = await api.get(records_url(run_id), params={"after": garbage})
        assert_problem(response, 400, "invalid_cursor")
    for limit in ("0", "1001", "ten", "-1", "\uff11", "1" * 30):
        response = await api.get(records_url(run_id), params={"limit": limit})
        assert_problem(response, 400, "invalid_limit")
        assert response.json()["field"] == "limit"


async def test_reading_an_unknown_stream_is_404(api: httpx.AsyncClient, run_id: str) -> None:
    assert_problem(await api.get(records_url(run_id, "ghost")), 404, "not_found")
    response = await api.post(records_url(run_id, "ghost"), json={"records": [{"payload": 1}]})
    assert_problem(response, 404, "not_found")


async def test_nesting_is_bounded_so_every_stored_record_can_be_served_again(
        api: httpx.AsyncClient, run_id: str) -> None:
    await create_stream(api, run_id)

    def nested(depth: int) -> str:
        return '{"records": [{"payload": ' + "[" * depth + "]" * depth + "}]}"

    headers = {"content-type": "application/json"}
    at_limit = await api.post(records_url(run_id), content=nested(64), headers=headers)
    assert at_limit.status_code == 201
    over = await api.post(records_url(run_id), content=nested(65), headers=headers)
    assert_problem(over, 422, "invalid_record")
    # Deeper than the JSON decoder goes: still a client error, never a 500.
    way_over = await api.post(records_url(run_id), content=nested(5000), headers=headers)
    assert_problem(way_over, 400, "invalid_request")
    [record] = (await api.get(records_url(run_id))).json()["records"]
    depth, value = 0, record["payload"]
    while isinstance(value, list):
        depth, value = depth + 1, value[0] if value else None
    assert depth == 64
