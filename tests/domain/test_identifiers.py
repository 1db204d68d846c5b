"""Ids: one alphabet everywhere, and aggregate/event ids derived deterministically from keys."""

from __future__ import annotations

import string

import pytest
from hypothesis import given
from hypothesis import strategies as st

from domain.errors import InvalidIdentifier
from domain.identifiers import RunKey, StreamKey, input_event_id, object_intent_id, validate_id

ALPHABET = string.ascii_letters + string.digits + "._:-"
IDS = st.text(ALPHABET, min_size=1, max_size=128).filter(lambda value: value not in {".", ".."})


@given(IDS)
def test_every_id_of_the_alphabet_up_to_128_chars_is_accepted(value: str) -> None:
    assert validate_id(value, "run_id") == value


@pytest.mark.parametrize("value", [".", ".."])
def test_dot_segments_are_refused_because_ids_become_object_key_segments(value: str) -> None:
    with pytest.raises(InvalidIdentifier):
        validate_id(value, "run_id")


@given(st.text(min_size=1, max_size=130).filter(
    lambda value: len(value) > 128 or any(char not in ALPHABET for char in value)))
def test_any_other_text_is_refused_naming_the_field(value: str) -> None:
    with pytest.raises(InvalidIdentifier) as refused:
        validate_id(value, "run_id")
    assert refused.value.extra["field"] == "run_id"


@pytest.mark.parametrize("value", ["", None, 5, b"run", "run\n", "run/1"])
def test_empty_non_string_and_separator_ids_are_refused(value: object) -> None:
    with pytest.raises(InvalidIdentifier):
        validate_id(value, "run_id")  # type: ignore[arg-type]


def test_run_key_builds_stream_keys_only_from_valid_stream_ids() -> None:
    run = RunKey("t", "r")
    assert run.stream("s") == StreamKey("t", "r", "s")
    with pytest.raises(InvalidIdentifier):
        run.stream("a b")


@given(IDS, IDS, IDS)
def test_the_channel_key_round_trips_and_the_stream_key_knows_its_run(
        tenant: str, run_id: str, stream_id: str) -> None:
    key = StreamKey(tenant, run_id, stream_id)
    assert StreamKey.from_channel_key(key.channel_key) == key
    assert key.run == RunKey(tenant, run_id)


def test_aggregate_ids_are_stable_and_distinct_per_tenant_run_and_stream() -> None:
    key = StreamKey("t", "r", "s")
    assert key.aggregate_id == StreamKey("t", "r", "s").aggregate_id
    others = [StreamKey("t2", "r", "s"), StreamKey("t", "r2", "s"), StreamKey("t", "r", "s2")]
    assert len({key.aggregate_id, *(other.aggregate_id for other in others)}) == 4


def test_object_intent_ids_depend_on_stream_and_idempotency_key_only() -> None:
    key = StreamKey("t", "r", "s")
    assert object_intent_id(key, "o1") == object_intent_id(StreamKey("t", "r", "s"), "o1")
    assert object_intent_id(key, "o1") != object_intent_id(key, "o2")
    assert object_intent_id(key, "o1") != object_intent_id(StreamKey("t2", "r", "s"), "o1")


def test_input_event_ids_are_stable_per_stream_and_sequence() -> None:
    key = StreamKey("t", "r", "s")
    assert input_event_id(key, 3) == input_event_id(StreamKey("t", "r", "s"), 3)
    assert input_event_id(key, 3) != input_event_id(key, 4)
    assert input_event_id(key, 3) != input_event_id(StreamKey("t", "r", "s2"), 3)
