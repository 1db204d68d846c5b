"""Submitted records: exactly one body, redacted before sizing, at most 64 KiB inline."""

from __future__ import annotations

import base64
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from domain.canonical_json import compact_json
from domain.errors import InvalidRecord, TooLarge
from domain.records import (
    IDEMPOTENCY_KEY_MAX,
    INLINE_MAX_BYTES,
    ObjectRef,
    draft_for_object,
    draft_from_wire,
)
from domain.redaction import MASK


def json_string_of(size: int) -> str:
    """A payload string whose compact JSON encoding is exactly `size` bytes."""
    return "x" * (size - 2)


def test_a_json_payload_is_sized_as_its_compact_utf8_encoding() -> None:
    draft = draft_from_wire({"payload": {"text": "héllo", "n": [1, 2]}}, ())
    assert draft.size == len('{"text":"héllo","n":[1,2]}'.encode())
    assert (draft.content_type, draft.has_payload, draft.data) == ("application/json", True, None)


def test_a_null_payload_is_a_payload() -> None:
    draft = draft_from_wire({"payload": None}, ())
    assert (draft.has_payload, draft.payload, draft.size) == (True, None, 4)


def test_base64_data_is_sized_as_decoded_bytes() -> None:
    draft = draft_from_wire({"data": base64.b64encode(b"\x00" * 300).decode()}, ())
    assert (draft.size, draft.data, draft.content_type) == (300, b"\x00" * 300,
                                                            "application/octet-stream")
    assert not draft.has_payload


def test_the_content_type_and_idempotency_key_are_kept() -> None:
    draft = draft_from_wire({"payload": 1, "content_type": "text/x-token",
                             "idempotency_key": "k1"}, ())
    assert (draft.content_type, draft.idempotency_key) == ("text/x-token", "k1")


def test_redaction_is_applied_before_sizing_and_storing() -> None:
    secret = "s" * 1000
    draft = draft_from_wire({"payload": {"user": {"email": secret}}}, ("/user/email",))
    assert draft.payload == {"user": {"email": MASK}}
    assert draft.size == len(compact_json({"user": {"email": MASK}}))


def test_redaction_can_bring_an_oversized_payload_under_the_limit() -> None:
    item = {"payload": {"blob": json_string_of(INLINE_MAX_BYTES)}}
    with pytest.raises(TooLarge):
        draft_from_wire(item, ())
    assert draft_from_wire(item, ("/blob",)).payload == {"blob": MASK}


def test_a_payload_of_exactly_64_kib_is_accepted_and_one_byte_more_is_too_large() -> None:
    assert draft_from_wire({"payload": json_string_of(INLINE_MAX_BYTES)}, ()).size == (
        INLINE_MAX_BYTES)
    with pytest.raises(TooLarge) as refused:
        draft_from_wire({"payload": json_string_of(INLINE_MAX_BYTES + 1)}, ())
    assert refused.value.extra == {"limit": INLINE_MAX_BYTES, "size": INLINE_MAX_BYTES + 1}


def test_data_of_exactly_64_kib_is_accepted_and_one_byte_more_is_too_large() -> None:
    exact = base64.b64encode(b"a" * INLINE_MAX_BYTES).decode()
    assert draft_from_wire({"data": exact}, ()).size == INLINE_MAX_BYTES
    over = base64.b64encode(b"a" * (INLINE_MAX_BYTES + 1)).decode()
    with pytest.raises(TooLarge):
        draft_from_wire({"data": over}, ())


def test_huge_base64_is_refused_before_it_is_decoded() -> None:
    with pytest.raises(TooLarge):
        draft_from_wire({"data": "A" * (10 * INLINE_MAX_BYTES)}, ())


@pytest.mark.parametrize("item", [
    "not an object",
    [],
    {},
    {"payload": 1, "data": "AA=="},
    {"payload": 1, "sequence": 4},
    {"data": 5},
    {"data": "not base64!"},
    {"data": "AAA"},  # bad padding
    {"payload": 1, "idempotency_key": ""},
    {"payload": 1, "idempotency_key": 7},
    {"payload": 1, "idempotency_key": "k" * (IDEMPOTENCY_KEY_MAX + 1)},
    {"payload": 1, "content_type": ""},
    {"payload": 1, "content_type": 3},
    {"payload": 1, "content_type": "t" * 256},
])
def test_malformed_records_are_invalid(item: Any) -> None:
    with pytest.raises(InvalidRecord):
        draft_from_wire(item, ())


def test_an_idempotency_key_of_the_maximum_length_is_accepted() -> None:
    key = "k" * IDEMPOTENCY_KEY_MAX
    assert draft_from_wire({"payload": 1, "idempotency_key": key}, ()).idempotency_key == key


@given(st.binary(max_size=2000))
def test_data_round_trips_through_base64(body: bytes) -> None:
    draft = draft_from_wire({"data": base64.b64encode(body).decode()}, ())
    assert (draft.data, draft.size) == (body, len(body))


def test_an_object_record_weighs_its_inline_reference_unread_and_has_no_client_key() -> None:
    ref = ObjectRef("obj-1", 32 * 1024 * 1024, "a" * 64, "application/pdf")
    draft = draft_for_object(ref)
    assert draft.size == len(compact_json({"object_id": "obj-1", "size": ref.size,
                                           "sha256": ref.sha256,
                                           "content_type": "application/pdf"}))
    assert (draft.object, draft.idempotency_key, draft.content_type) == (ref, None,
                                                                          "application/pdf")


@pytest.mark.parametrize("payload", [float("nan"), float("inf"), "\ud800", {"k": {1, 2}}])
def test_values_json_cannot_carry_faithfully_are_refused_as_invalid_records(
        payload: object) -> None:
    with pytest.raises(InvalidRecord):
        draft_from_wire({"payload": payload}, ())
