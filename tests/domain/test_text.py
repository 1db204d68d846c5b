"""Storable text: what Postgres `text`/`jsonb` can hold (found by the schemathesis run)."""

from __future__ import annotations

import pytest

from domain.definition import build_definition
from domain.errors import InvalidDefinition, InvalidRecord
from domain.object_intent import ObjectPins
from domain.records import draft_from_wire
from domain.text import first_unstorable, is_storable


def test_nul_and_lone_surrogates_are_not_storable() -> None:
    assert is_storable("plain ✓ 😀")
    assert not is_storable("a\x00b")
    assert not is_storable("a\ud800b")
    assert first_unstorable({"a": [1, {"b": "x\x00"}]}) == "a.1.b"
    assert first_unstorable({"k\x00": 1}) == ""
    assert first_unstorable({"a": ["fine"]}) is None


@pytest.mark.parametrize("text", ["a\x00b", "a\udfffb"])
def test_definitions_keys_and_pins_refuse_unstorable_text(text: str) -> None:
    with pytest.raises(InvalidDefinition) as refused:
        build_definition({"stream_id": "s", "content_class": "c",
                          "authorization": {"readers": [text]}}, "local")
    assert refused.value.extra["field"] == "authorization.readers.0"
    with pytest.raises(InvalidRecord):
        draft_from_wire({"payload": 1, "idempotency_key": text}, ())
    with pytest.raises(InvalidRecord):
        ObjectPins(idempotency_key="k", sha256="0" * 64, size=1, content_type=text).validate()
    assert draft_from_wire({"payload": "a\x00b"}, ()).payload == "a\x00b"
