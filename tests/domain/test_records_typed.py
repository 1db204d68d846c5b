"""The typed append path (ADR 0049) against the field-by-field one it stands in for.

A body that msgspec decodes into `Submitted` records must come out of `draft_from_wire`
exactly as the same body decoded as plain values does: the same draft (size, content
type, canonical text, value), or the same refusal (class, code, message, extra). And the
canonical text msgspec computes must be `compact_json`'s, byte for byte, for every value
a JSON decoder can produce.
"""

from __future__ import annotations

import json
from typing import Any

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from domain.canonical_json import compact_json
from domain.errors import DomainError, TooLarge
from domain.payload_text import canonical_text
from domain.records import INLINE_MAX_BYTES, Submitted, draft_from_wire, drafts_from_wire

typed_records = msgspec.json.Decoder(list[Submitted]).decode

texts = st.text(st.characters(codec="utf-8", exclude_categories=["Cs"]), max_size=12)
floats = st.one_of(
    st.floats(allow_nan=False, allow_infinity=False),
    st.sampled_from([1e16, 1e-5, 1.5e-7, 0.0001, 1e22, 5e-324, -0.0, 123456789.125, 1e15]))
scalars = st.one_of(st.none(), st.booleans(), st.integers(min_value=-(10**30), max_value=10**30),
                    floats, texts, st.sampled_from(["v1.2", "3e4f", "1E5", "\u2028", "\x7f"]))
json_values = st.recursive(
    scalars, lambda inner: st.one_of(st.lists(inner, max_size=4),
                                     st.dictionaries(texts, inner, max_size=4)), max_leaves=20)

FIELDS = ("payload", "data", "content_type", "idempotency_key")
field_values = st.one_of(
    json_values, st.sampled_from(["AAAA", "AA==", "***", "", "text/plain", "application/json",
                                  "not a type", "k" * 201, "a\x00b"]))
records = st.one_of(
    st.dictionaries(st.sampled_from(FIELDS), field_values, max_size=4),
    st.dictionaries(st.sampled_from((*FIELDS, "pay", "extra")), field_values, max_size=3),
    json_values)
masks = st.sampled_from([(), ("/a",), ("/0", "/b/c")])


def outcome(record: Any, mask: tuple[str, ...], *, in_batch: bool = False) -> Any:
    """What drafting `record` comes to, alone or (`in_batch`) by `drafts_from_wire`."""
    try:
        draft = drafts_from_wire([record], mask)[0] if in_batch else draft_from_wire(record, mask)
    except DomainError as error:
        return type(error), error.code, error.detail, error.extra
    return (draft.content_type, draft.size, draft.payload_json, draft.has_payload,
            draft.data, draft.idempotency_key, compact_json(draft.payload))


@settings(max_examples=400, deadline=None)
@given(st.lists(records, min_size=1, max_size=4), masks)
def test_a_typed_record_comes_out_as_its_plain_decoding_does(
        batch: list[Any], mask: tuple[str, ...]) -> None:
    body = json.dumps(batch).encode()
    plain = msgspec.json.decode(body)
    try:
        typed = typed_records(body)
    except msgspec.ValidationError:
        return  # not of the wire types: the plain path alone answers it
    assert all(isinstance(record, dict) for record in plain)
    for typed_record, plain_record in zip(typed, plain, strict=True):
        assert outcome(typed_record, mask) == outcome(plain_record, mask) \
            == outcome(typed_record, mask, in_batch=True) \
            == outcome(plain_record, mask, in_batch=True)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.fixed_dictionaries({"payload": json_values}, optional={
    "content_type": st.sampled_from(["text/plain", "application/json"]),
    "idempotency_key": st.text(min_size=1, max_size=8)}), min_size=1, max_size=3), masks)
def test_every_well_typed_batch_takes_the_typed_path(batch: list[Any],
                                                     mask: tuple[str, ...]) -> None:
    """So the comparison above is not vacuous: these always decode as `Submitted`."""
    body = json.dumps(batch).encode()
    typed = typed_records(body)
    for typed_record, plain_record in zip(typed, msgspec.json.decode(body), strict=True):
        assert outcome(typed_record, mask, in_batch=True) == outcome(plain_record, mask)


@settings(max_examples=1000, deadline=None)
@given(json_values)
def test_the_canonical_text_is_compact_json_byte_for_byte(value: Any) -> None:
    decoded = msgspec.json.decode(json.dumps(value).encode())
    assert canonical_text(decoded, decoded_from_json=True) == compact_json(decoded)


@pytest.mark.parametrize("text", [b'{"a": 1,\n "a": 2}', b'"\\u00e9\\u0041"', b"[1e16, 1E-5]",
                                  b"-0", b'{"z":1,"a":[true,null]}', b"1" * 40])
def test_received_text_is_stored_canonical_not_as_received(text: bytes) -> None:
    [record] = typed_records(b'[{"payload": ' + text + b"}]")
    draft = draft_from_wire(record, ())
    assert draft.payload_json == compact_json(json.loads(text)).decode()


def test_the_64_kib_rule_is_measured_on_the_canonical_text() -> None:
    def batch(chars: int) -> bytes:  # canonical payload text: ["x…x"], chars + 4 bytes
        return b'[{"payload": [   "' + b"x" * chars + b'"   ]}]'

    [at_limit] = typed_records(batch(INLINE_MAX_BYTES - 4))  # received text is 6 bytes over
    assert draft_from_wire(at_limit, ()).size == INLINE_MAX_BYTES
    [over] = typed_records(batch(INLINE_MAX_BYTES - 3))
    with pytest.raises(TooLarge):
        draft_from_wire(over, ())
