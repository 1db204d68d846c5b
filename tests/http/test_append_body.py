"""The append body, decoded once into typed records (ADR 0049), refused as it always was.

Hostile bodies first: each must get the problem+json code the field-by-field rules give
(asked of the domain here, so the expectation is the rule's own, not typed twice), and
nothing of the batch is stored.
"""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from domain.errors import DomainError
from domain.records import draft_from_wire
from tests.http.support import assert_problem, create_stream

JSON = {"content-type": "application/json"}


def records_url(run_id: str) -> str:
    return f"/runs/{run_id}/streams/s/records"


async def head_of(api: httpx.AsyncClient, run_id: str) -> int:
    head: int = (await api.get(f"/runs/{run_id}/streams/s")).json()["status"]["head"]
    return head


def rule_code(record: Any) -> str:
    """The code the domain's field-by-field rules give this record (plain JSON values)."""
    with pytest.raises(DomainError) as refused:
        draft_from_wire(record, ())
    return refused.value.code


WELL_SHAPED_BUT_REFUSED: list[Any] = [
    {"payload": 1, "content_type": 5},
    {"payload": 1, "content_type": "not a type"},
    {"payload": 1, "content_type": "text/plain", "data": "AA=="},
    {"payload": 1, "idempotency_key": 7},
    {"payload": 1, "idempotency_key": ""},
    {"payload": 1, "idempotency_key": "k" * 201},
    {"payload": 1, "idempotency_key": "a\x00b"},
    {"payload": 1, "data": None},
    {"data": 5},
    {"data": "***"},
    {"data": "AAAA=="},
    {"content_type": "text/plain"},
    {},
    {"payload": 1, "pay": 2},
    {"payload": 1, "Payload": 2},
]


@pytest.mark.parametrize("record", WELL_SHAPED_BUT_REFUSED, ids=json.dumps)
async def test_a_record_the_rules_refuse_gets_the_rules_code(
        api: httpx.AsyncClient, run_id: str, record: Any) -> None:
    await create_stream(api, run_id)
    response = await api.post(records_url(run_id),
                              json={"records": [{"payload": "fine"}, record]})
    assert_problem(response, 422, rule_code(record))
    assert await head_of(api, run_id) == 0


@pytest.mark.parametrize("body", [
    b'{"records": [1]}',
    b'{"records": ["x"]}',
    b'{"records": [[]]}',
    b'{"records": {"payload": 1}}',
    b'{"records": [{"payload": 1}], "extra": 1}',
    b'{"records": [{"payload": [1E400]}]}',
    b'{"records": [{"payload": "\xff"}]}',
    b'{"records": [{"payload": "\\ud800"}]}',
    b'{"records": [{"payload": 1}]',
    b'{"records": [{"payload": 1}]} trailing',
    b"null",
    b"[]",
])
async def test_a_body_that_is_not_of_the_append_shape_is_400(
        api: httpx.AsyncClient, run_id: str, body: bytes) -> None:
    await create_stream(api, run_id)
    response = await api.post(records_url(run_id), content=body, headers=JSON)
    assert_problem(response, 400, "invalid_request")
    assert await head_of(api, run_id) == 0


async def test_null_optional_fields_are_absent_and_a_null_payload_is_a_payload(
        api: httpx.AsyncClient, run_id: str) -> None:
    await create_stream(api, run_id)
    response = await api.post(records_url(run_id), json={"records": [
        {"payload": None, "content_type": None, "idempotency_key": None}]})
    assert response.status_code == 201, response.text
    [record] = (await api.get(records_url(run_id))).json()["records"]
    assert (record["payload"], record["content_type"]) == (None, "application/json")
    assert "idempotency_key" not in record


async def test_what_is_stored_is_the_canonical_value_whatever_the_spelling(
        api: httpx.AsyncClient, run_id: str) -> None:
    """Spacing, escapes, duplicate keys and exponent spelling are the client's; the record
    is the value they spell (last key wins, as every JSON reader of the row reads it)."""
    await create_stream(api, run_id)
    text = '{ "b" : "\\u00e9\\n" , "a": [ 1E16, -0, 1.50e-7 ], "b": "last" }'
    body = ('{"records": [{"payload": ' + text + "}]}").encode()
    response = await api.post(records_url(run_id), content=body, headers=JSON)
    assert response.status_code == 201, response.text
    [record] = (await api.get(records_url(run_id))).json()["records"]
    assert record["payload"] == {"b": "last", "a": [1e16, 0, 1.5e-7]}
    assert list(record["payload"]) == ["b", "a"]


async def test_a_record_nested_past_the_limit_is_refused_before_its_stream_is_looked_up(
        api: httpx.AsyncClient, run_id: str) -> None:
    """The depth rule answers first, as it did: an unknown stream does not change it."""
    deep = '{"records": [{"payload": ' + "[" * 65 + "]" * 65 + "}]}"
    response = await api.post(f"/runs/{run_id}/streams/ghost/records", content=deep,
                              headers=JSON)
    assert_problem(response, 422, "invalid_record")
