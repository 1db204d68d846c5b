"""Mask or refuse (`domain.masking`, ADR 0054): on a masked stream every representation of a
body that can hold JSON is masked before it is stored, and what cannot be masked is refused
unless the definition allows unmasked bodies."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from domain.errors import InvalidRecord, RedactionUnenforceable, TooLarge
from domain.live_chunk import outgoing_chunk
from domain.masking import MAX_JSON_DEPTH, BytesBody, ObjectBody, enforce
from domain.media_type import is_json_media_type
from domain.records import INLINE_MAX_BYTES, draft_from_wire
from domain.redaction import MASK

SECRET = "alice@example.com"
MASKED = ("/user/email",)
RECORD = {"user": {"name": "a", "email": SECRET}, "n": 1}
JSON_TYPES = ["application/json", "application/json; charset=utf-8", "APPLICATION/JSON",
              "application/vnd.foo+json", "Application/Problem+JSON ; q=1",
              'application/json;profile="x"']
OTHER_TYPES = ["text/plain", "application/octet-stream", "application/jsonl",
               "application/x-ndjson", "text/json-ish", "application/json-seq",
               "application/jsonx"]


def b64(value: bytes) -> str:
    return base64.b64encode(value).decode()


def data_record(body: bytes, content_type: str | None) -> dict[str, Any]:
    record: dict[str, Any] = {"data": b64(body)}
    if content_type is not None:
        record["content_type"] = content_type
    return record


@pytest.mark.parametrize("content_type", JSON_TYPES)
def test_json_data_is_decoded_masked_and_kept_as_data_of_its_type(content_type: str) -> None:
    draft = draft_from_wire(data_record(json.dumps(RECORD).encode(), content_type), MASKED)
    assert draft.data is not None and SECRET.encode() not in draft.data
    assert json.loads(draft.data) == {"user": {"name": "a", "email": MASK}, "n": 1}
    assert (draft.content_type, draft.size, draft.has_payload) == (
        content_type, len(draft.data), False)


@pytest.mark.parametrize("content_type", [*OTHER_TYPES, None])
def test_other_data_on_a_masked_stream_is_refused_naming_the_pin(
        content_type: str | None) -> None:
    with pytest.raises(RedactionUnenforceable) as refused:
        draft_from_wire(data_record(json.dumps(RECORD).encode(), content_type), MASKED)
    assert refused.value.code == "redaction_unenforceable"
    assert refused.value.extra["pin"] == "redaction.mask"
    assert "redaction.allow_unmasked_bodies" in refused.value.detail


@pytest.mark.parametrize("content_type", OTHER_TYPES)
def test_the_opt_in_keeps_other_data_as_sent(content_type: str) -> None:
    sent = json.dumps(RECORD).encode()
    draft = draft_from_wire(data_record(sent, content_type), MASKED, allow_unmasked_bodies=True)
    assert draft.data == sent


@pytest.mark.parametrize("body", [b"{not json", b'{"user":', b"\xff\xfe{}", b"NaN",
                                  b"\xef\xbb\xbf{}", b"", b'{"a":1} trailing'])
@pytest.mark.parametrize("allow", [False, True])
def test_json_typed_data_that_is_not_json_is_refused_whatever_the_opt_in(
        body: bytes, allow: bool) -> None:
    with pytest.raises(InvalidRecord) as refused:
        draft_from_wire(data_record(body, "application/json"), MASKED, allow)
    assert refused.value.extra["field"] == "data"
    assert "redaction.mask" in refused.value.detail


def test_json_data_nested_too_deep_to_walk_is_refused() -> None:
    at_limit = b"[" * MAX_JSON_DEPTH + b"]" * MAX_JSON_DEPTH
    assert draft_from_wire(data_record(at_limit, "application/json"), MASKED).data == at_limit
    for depth in (MAX_JSON_DEPTH + 1, 5000):
        with pytest.raises(InvalidRecord):
            draft_from_wire(data_record(b"[" * depth + b"]" * depth, "application/json"),
                            MASKED)


def test_a_duplicate_key_cannot_carry_the_secret_past_the_mask() -> None:
    """The decoder keeps the last of two equal keys; the bytes sent would still hold the
    first, which another parser may read. What is kept is the text of what was decoded."""
    sent = b'{"user":{"email":"' + SECRET.encode() + b'"},"user":{"name":"b"}}'
    draft = draft_from_wire(data_record(sent, "application/json"), MASKED)
    assert draft.data == b'{"user":{"name":"b"}}'


def test_masks_reach_into_arrays_in_every_json_representation() -> None:
    value = {"users": [{"email": "a@x"}, {"email": SECRET}]}
    mask = ("/users/1/email",)
    expected = {"users": [{"email": "a@x"}, {"email": MASK}]}
    assert draft_from_wire({"payload": value}, mask).payload == expected
    data = draft_from_wire(data_record(json.dumps(value).encode(), "text/x+json"), mask).data
    assert data is not None and json.loads(data) == expected
    assert outgoing_chunk(value, mask, False) == expected


def test_a_message_batch_masks_each_message() -> None:
    batch = [RECORD, {"user": {"email": SECRET}}, "plain"]
    draft = draft_from_wire({"payload": batch}, MASKED, message_batch=True)
    assert draft.payload == [{"user": {"name": "a", "email": MASK}, "n": 1},
                             {"user": {"email": MASK}}, "plain"]
    assert SECRET not in (draft.payload_json or "")


def test_an_unmasked_stream_keeps_every_body_as_sent() -> None:
    sent = b'{"user":{"email":"x"},"user":{"email":"y"}}  '
    assert draft_from_wire(data_record(sent, "application/json"), ()).data == sent
    assert draft_from_wire(data_record(b"{bad", "application/json"), ()).data == b"{bad"
    assert enforce(ObjectBody("application/pdf"), (), False) == ObjectBody("application/pdf")


@pytest.mark.parametrize("allow", [False, True])
def test_an_object_body_is_refused_on_a_masked_stream_unless_allowed(allow: bool) -> None:
    for content_type in ("application/pdf", "application/json"):
        if allow:
            assert enforce(ObjectBody(content_type), MASKED, True) == ObjectBody(content_type)
        else:
            with pytest.raises(RedactionUnenforceable):
                enforce(ObjectBody(content_type), MASKED, False)


def test_a_byte_shaped_live_chunk_is_masked_or_refused_like_a_data_record() -> None:
    chunk = {"content_type": "application/json", "data": b64(json.dumps(RECORD).encode()),
             "extra": {"user": {"email": SECRET}}}
    sent = outgoing_chunk(chunk, MASKED, False)
    assert json.loads(base64.b64decode(sent["data"]))["user"]["email"] == MASK
    assert sent["extra"] == {"user": {"email": SECRET}}  # only pinned paths are masked
    text = {"content_type": "text/plain", "data": b64(SECRET.encode())}
    with pytest.raises(RedactionUnenforceable):
        outgoing_chunk(text, MASKED, False)
    assert outgoing_chunk(text, MASKED, True) == text
    assert outgoing_chunk(text, (), False) == text  # an unmasked stream reads no chunk
    for broken in ({"content_type": "application/json", "data": "not base64!"},
                   {"content_type": "application/json", "data": 5},
                   {"content_type": "not a type", "data": b64(b"{}")}):
        with pytest.raises(InvalidRecord):
            outgoing_chunk(broken, MASKED, True)


def test_a_mask_that_grows_a_body_past_64_kib_is_refused_by_size() -> None:
    items = [0] * (INLINE_MAX_BYTES // 2 - 1)
    body = json.dumps(items, separators=(",", ":")).encode()
    assert len(body) < INLINE_MAX_BYTES
    with pytest.raises(TooLarge):
        draft_from_wire(data_record(body, "application/json"), ("/0", "/1", "/2", "/3"))


JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False,
                                                          allow_infinity=False)
    | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=4), inner,
                                                                max_size=4),
    max_leaves=20)


@given(JSON_VALUES, st.sampled_from(JSON_TYPES), st.booleans())
def test_no_json_data_keeps_the_secret_under_its_pointer(other: Any, content_type: str,
                                                         indent: bool) -> None:
    value = {"user": {"email": SECRET, "other": other}, "rest": other}
    sent = json.dumps(value, indent=2 if indent else None, ensure_ascii=indent).encode()
    draft = draft_from_wire(data_record(sent, content_type), MASKED)
    assert draft.data is not None
    kept = json.loads(draft.data)
    assert kept["user"]["email"] == MASK
    assert kept == {**value, "user": {**value["user"], "email": MASK}}


@given(st.sampled_from(JSON_TYPES + OTHER_TYPES), st.booleans())
def test_a_media_type_is_json_exactly_when_its_essence_is_or_ends_in_json(
        content_type: str, upper: bool) -> None:
    spelled = content_type.upper() if upper else content_type
    essence = content_type.split(";")[0].strip().lower()
    assert is_json_media_type(spelled) == (essence == "application/json"
                                           or essence.endswith("+json"))
    assert is_json_media_type(spelled) == (content_type in JSON_TYPES)
    body = BytesBody(b"{}", spelled)
    if content_type in JSON_TYPES:
        assert enforce(body, MASKED, False) == body
