"""`StoredRecord.from_draft` fills the instance dict directly (no frozen `__init__`): it must make
exactly the record the constructor makes, for any draft, and keep the record's rules:
frozen, equal and hashed on every field but `offset`, payload parsed at most once."""

from __future__ import annotations

import dataclasses
import json
from datetime import UTC, datetime, timedelta
from typing import Any
from unittest import mock

import pytest
from hypothesis import given
from hypothesis import strategies as st

from application.ports.records import StoredRecord
from domain.canonical_json import compact_json
from domain.records import Draft, ObjectRef

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(), inner, max_size=3),
    max_leaves=8)
texts = st.none() | st.text(max_size=12)
refs = st.builds(ObjectRef, object_id=st.text(max_size=8), size=st.integers(0, 99),
                 sha256=st.text(max_size=8), content_type=st.text(max_size=8))


@st.composite
def drafts(draw: st.DrawFn) -> Draft:
    body = draw(st.sampled_from(["payload", "payload with text", "data", "object"]))
    payload = draw(json_values) if body.startswith("payload") else None
    return Draft(content_type=draw(st.text(max_size=12)), size=draw(st.integers(0, 1 << 16)),
                 payload=payload, has_payload=body.startswith("payload"),
                 payload_json=(compact_json(payload).decode() if body == "payload with text"
                               else None),
                 data=draw(st.binary(max_size=8)) if body == "data" else None,
                 object=draw(refs) if body == "object" else None,
                 idempotency_key=draw(texts))


def constructed(sequence: int, draft: Draft, at: datetime, offset: int | None) -> StoredRecord:
    """What `from_draft` made before: the frozen dataclass's own constructor."""
    text = draft.payload_json
    if text is None and draft.has_payload:
        text = compact_json(draft.payload).decode()
    return StoredRecord(sequence=sequence, content_type=draft.content_type, appended_at=at,
                        size=draft.size, payload_json=text, data=draft.data,
                        object=draft.object, idempotency_key=draft.idempotency_key,
                        offset=offset)


def every_field(record: StoredRecord) -> dict[str, Any]:
    return {each.name: getattr(record, each.name) for each in dataclasses.fields(record)}


@given(st.integers(1, 1 << 40), drafts(),
       st.datetimes(timezones=st.just(UTC)), st.none() | st.integers(0, 1 << 40))
def test_from_draft_makes_what_the_constructor_makes(sequence: int, draft: Draft, at: datetime,
                                                    offset: int | None) -> None:
    made, expected = StoredRecord.from_draft(sequence, draft, at, offset), constructed(
        sequence, draft, at, offset)
    assert type(made) is StoredRecord
    assert vars(made) == vars(expected)  # every field set, no other attribute
    assert every_field(made) == every_field(expected)
    assert made == expected and hash(made) == hash(expected) and repr(made) == repr(expected)
    assert made.has_payload is draft.has_payload
    assert made.payload == (json.loads(made.payload_json) if draft.has_payload else None)


def record(**changes: Any) -> StoredRecord:
    fields = dict(sequence=1, content_type="application/json",
                  appended_at=datetime(2026, 1, 1, tzinfo=UTC), size=7,
                  payload_json='{"a":1}', offset=7)
    return StoredRecord(**{**fields, **changes})


@pytest.mark.parametrize("change", [
    {"sequence": 2}, {"content_type": "text/plain"}, {"size": 8},
    {"appended_at": datetime(2026, 1, 1, tzinfo=UTC) + timedelta(seconds=1)},
    {"payload_json": '{"a":2}'}, {"data": b"x"}, {"idempotency_key": "k"},
    {"object": ObjectRef("o", 1, "s", "t")}])
def test_every_field_but_the_offset_is_compared(change: dict[str, Any]) -> None:
    assert record(**change) != record()
    assert record(offset=99) == record() and hash(record(offset=99)) == hash(record())


def test_the_payload_is_parsed_once_and_not_compared() -> None:
    parsed, fresh = record(), record()
    with mock.patch("application.ports.records.json.loads", wraps=json.loads) as loads:
        first = parsed.payload
        assert parsed.payload is first and first == {"a": 1}
    assert loads.call_count == 1
    assert parsed == fresh and hash(parsed) == hash(fresh)
    assert "payload=" not in repr(parsed)


def test_a_record_stays_frozen() -> None:
    made = StoredRecord.from_draft(1, Draft(content_type="text/plain", size=1, data=b"x"),
                                   datetime(2026, 1, 1, tzinfo=UTC))
    with pytest.raises(dataclasses.FrozenInstanceError):
        made.sequence = 2  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        made.other = 3  # type: ignore[attr-defined]
    assert made.payload is None and dataclasses.replace(made, sequence=2).sequence == 2
