"""The stream definition: validated and defaulted once at creation, immutable after."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import ValidationError

from domain.credit_ceilings import CreditCeilings
from domain.definition import (
    FORBIDDEN_CONTENT_CLASSES,
    MAX_CONSUMERS,
    MAX_EXPIRES_AFTER_SECONDS,
    StreamDefinition,
    build_definition,
)
from domain.errors import DomainError, ForbiddenContentClass, InvalidDefinition, InvalidIdentifier
from domain.pins import MAX_UNREAD_ITEMS_CEILING
from tests.domain.factories import NODE_REGION, definition

MINIMAL = {"stream_id": "answer", "content_class": "output.text"}


def build(**fields: Any) -> StreamDefinition:
    return build_definition(MINIMAL | fields, NODE_REGION)


def refused_field(**fields: Any) -> str:
    """Build, expect InvalidDefinition, and return the field it names."""
    with pytest.raises(InvalidDefinition) as refused:
        build(**fields)
    field: str = refused.value.extra["field"]
    return field


# -- defaults ---------------------------------------------------------------


def test_only_stream_id_and_content_class_are_required_and_every_default_is_filled() -> None:
    assert build().to_wire() == {
        "stream_id": "answer", "direction": "output", "mode": "durable",
        "content_class": "output.text",
        "credit": {"max_unread_items": 1000, "max_unread_bytes": 8388608,
                   "max_total_items": 100000, "max_total_bytes": 1073741824,
                   "max_open_objects": 100,
                   "on_unread_full": "reject", "block_timeout_seconds": 5.0},
        "retention": {"max_age_seconds": None, "max_records": None},
        "expires_after_seconds": None,
        "redaction": {"mask": [], "allow_unmasked_bodies": False},
        "placement": {"metadata_home": NODE_REGION, "metadata_replicas": [],
                      "object_regions": [NODE_REGION], "client_egress_regions": [NODE_REGION],
                      "log_region": NODE_REGION},
        "authorization": {"readers": ["*"], "writers": ["*"]},
        "consumers": [],
    }


def test_default_and_explicit_block_timeout_have_the_same_type_on_the_wire() -> None:
    # A re-create that spells out the default must produce the same stored definition.
    explicit = build(credit={"block_timeout_seconds": 5})
    assert explicit == build()
    assert type(explicit.credit.block_timeout_seconds) is float
    assert type(build().credit.block_timeout_seconds) is float


def test_missing_placement_fields_default_to_the_requested_metadata_home() -> None:
    placement = build(placement={"metadata_home": "us-2"}).placement
    assert placement.metadata_home == "us-2"
    assert placement.object_regions == ("us-2",)
    assert placement.client_egress_regions == ("us-2",)
    assert placement.log_region == "us-2"


def test_explicit_placement_fields_are_kept() -> None:
    placement = build(placement={"metadata_home": "eu-1", "metadata_replicas": ["eu-2"],
                                 "object_regions": ["eu-2", "eu-1"],
                                 "client_egress_regions": ["eu-1"], "log_region": "eu-3"}
                      ).placement
    assert placement.metadata_replicas == ("eu-2",)
    assert placement.object_regions == ("eu-2", "eu-1")
    assert placement.log_region == "eu-3"


def test_identical_requests_give_equal_definitions() -> None:
    request = {"consumers": ["ui"], "redaction": {"mask": ["/user/email"]},
               "credit": {"max_unread_items": 5, "on_unread_full": "block"}}
    assert build(**request) == build(**request)
    assert build(**request) != build()


# -- identifiers --------------------------------------------------------------


@pytest.mark.parametrize("stream_id", ["", "a b", "a/b", "ü", "x" * 129, "a\n"])
def test_a_stream_id_outside_the_alphabet_or_length_is_refused(stream_id: str) -> None:
    with pytest.raises(InvalidIdentifier):
        build(stream_id=stream_id)


@pytest.mark.parametrize("stream_id", ["a", "x" * 128, "A-z_0.9:x"])
def test_a_stream_id_inside_the_alphabet_and_length_is_accepted(stream_id: str) -> None:
    assert build(stream_id=stream_id).stream_id == stream_id


@pytest.mark.parametrize("consumers", [["a b"], ["x" * 129], [""]])
def test_a_consumer_id_outside_the_alphabet_is_refused(consumers: list[str]) -> None:
    with pytest.raises(InvalidIdentifier):
        build(consumers=consumers)


def test_consumers_must_be_unique_and_bounded() -> None:
    assert refused_field(consumers=["ui", "ui"]) == "consumers"
    assert refused_field(consumers=[f"c{n}" for n in range(MAX_CONSUMERS + 1)]) == "consumers"
    assert len(build(consumers=[f"c{n}" for n in range(MAX_CONSUMERS)]).consumers) == MAX_CONSUMERS


# -- content class ------------------------------------------------------------


def test_raw_hidden_model_reasoning_is_refused_with_its_own_error() -> None:
    with pytest.raises(ForbiddenContentClass) as refused:
        build(content_class="model.reasoning.raw")
    assert refused.value.code == "invalid_content_class"
    assert refused.value.extra["field"] == "content_class"


@pytest.mark.parametrize("spelling", ["Model.Reasoning.Raw", "MODEL.REASONING.RAW"])
def test_raw_reasoning_is_refused_whatever_its_case(spelling: str) -> None:
    with pytest.raises(ForbiddenContentClass):
        build(content_class=spelling)


def test_raw_reasoning_cannot_enter_by_constructing_the_value_object_directly() -> None:
    # Stored definitions are re-validated when loaded; the rule must live in the model.
    wire = build().to_wire() | {"content_class": "model.reasoning.raw"}
    with pytest.raises(ForbiddenContentClass):
        StreamDefinition.model_validate(wire)


def test_other_model_content_classes_are_accepted() -> None:
    assert build(content_class="model.reasoning.summary").content_class == (
        "model.reasoning.summary")


@pytest.mark.parametrize("content_class", ["", "x" * 129])
def test_content_class_length_is_bounded(content_class: str) -> None:
    assert refused_field(content_class=content_class) == "content_class"


@pytest.mark.parametrize("content_class", [["output.text"], {"a": 1}, 7, None])
def test_a_content_class_that_is_not_a_string_is_an_invalid_definition(
        content_class: Any) -> None:
    assert refused_field(content_class=content_class) == "content_class"


# -- credit -------------------------------------------------------------------


@pytest.mark.parametrize("limit", ["max_unread_items", "max_unread_bytes", "max_total_items",
                                   "max_total_bytes"])
@pytest.mark.parametrize("value", [0, -1])
def test_credit_limits_must_be_positive(limit: str, value: int) -> None:
    assert refused_field(credit={limit: value}) == f"credit.{limit}"


def test_unread_items_limit_is_bounded_by_a_bigint_only() -> None:
    # The old 100,000 cap is gone: credit is counters, whatever the unread window (ADR 0047).
    assert build(credit={"max_unread_items": 100_001}).credit.max_unread_items == 100_001
    assert refused_field(credit={"max_unread_items": MAX_UNREAD_ITEMS_CEILING + 1}) == (
        "credit.max_unread_items")
    unbounded = CreditCeilings(max_unread_items=MAX_UNREAD_ITEMS_CEILING)
    assert build_definition(MINIMAL | {"credit": {"max_unread_items": MAX_UNREAD_ITEMS_CEILING}},
                            NODE_REGION, unbounded
                            ).credit.max_unread_items == MAX_UNREAD_ITEMS_CEILING == 2**63 - 1


@pytest.mark.parametrize("policy", ["reject", "block"])
def test_both_unread_policies_are_accepted(policy: str) -> None:
    assert build(credit={"on_unread_full": policy}).credit.on_unread_full == policy


def test_an_unknown_unread_policy_is_refused() -> None:
    assert refused_field(credit={"on_unread_full": "drop"}) == "credit.on_unread_full"


@pytest.mark.parametrize("timeout", [-0.1, 60.5])
def test_block_timeout_is_bounded(timeout: float) -> None:
    assert refused_field(credit={"block_timeout_seconds": timeout}) == (
        "credit.block_timeout_seconds")


# -- strict types ------------------------------------------------------------


@pytest.mark.parametrize(("fields", "field"), [
    ({"credit": {"max_unread_items": "5"}}, "credit.max_unread_items"),
    ({"credit": {"max_unread_items": True}}, "credit.max_unread_items"),
    ({"credit": {"max_unread_items": 5.0}}, "credit.max_unread_items"),
    ({"credit": {"block_timeout_seconds": True}}, "credit.block_timeout_seconds"),
    ({"credit": {"block_timeout_seconds": "5"}}, "credit.block_timeout_seconds"),
    ({"retention": {"max_records": "10"}}, "retention.max_records"),
    ({"stream_id": 5}, "stream_id"),
    ({"direction": "sideways"}, "direction"),
    ({"mode": "fast"}, "mode"),
    ({"consumers": "ui"}, "consumers"),
    ({"authorization": {"readers": "*"}}, "authorization.readers"),
    ({"authorization": {"writers": [1]}}, "authorization.writers.0"),
    ({"redaction": {"mask": "/a"}}, "redaction.mask"),
    ({"credit": None}, "credit"),
    ({"placement": "eu-1"}, "placement"),
    ({"placement": {"metadata_home": None}}, "placement.metadata_home"),
    ({"unknown": 1}, "unknown"),
    ({"credit": {"max_unread_item": 5}}, "credit.max_unread_item"),
])
def test_values_are_not_coerced_and_unknown_fields_are_refused(fields: dict[str, Any],
                                                               field: str) -> None:
    assert refused_field(**fields) == field


@pytest.mark.parametrize("raw", [None, [], "answer"])
def test_a_definition_that_is_not_an_object_is_refused(raw: Any) -> None:
    with pytest.raises(InvalidDefinition):
        build_definition(raw, NODE_REGION)


@pytest.mark.parametrize("missing", ["stream_id", "content_class"])
def test_required_fields_are_required(missing: str) -> None:
    raw = dict(MINIMAL)
    del raw[missing]
    with pytest.raises(InvalidDefinition) as refused:
        build_definition(raw, NODE_REGION)
    assert refused.value.extra["field"] == missing


# Keys include the real pin names so nested objects are exercised, not only refused as unknown.
PIN_NAMES = st.sampled_from([
    "max_unread_items", "max_unread_bytes", "max_total_items", "max_total_bytes",
    "on_unread_full", "block_timeout_seconds", "max_age_seconds", "max_records", "mask",
    "metadata_home", "metadata_replicas", "object_regions", "client_egress_regions",
    "log_region", "readers", "writers"]) | st.text(max_size=6)
JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(PIN_NAMES, inner, max_size=3),
    max_leaves=8,
)
FIELDS = ["stream_id", "content_class", "direction", "mode", "credit", "retention", "redaction",
          "placement", "authorization", "consumers", "expires_after_seconds"]


@given(st.dictionaries(st.sampled_from(FIELDS), JSON_VALUES, max_size=4))
def test_any_json_request_either_builds_or_is_refused_with_a_domain_error(
        fields: dict[str, Any]) -> None:
    # Whatever a client sends, the answer is a definition or a 4xx, never a crash (500).
    try:
        built = build(**fields)
    except DomainError:
        return
    assert built.content_class not in FORBIDDEN_CONTENT_CLASSES


# -- expiry ------------------------------------------------------------------


def test_expiry_is_a_positive_bounded_whole_number_of_seconds_or_absent() -> None:
    assert build().expires_after_seconds is None
    assert build(expires_after_seconds=60).expires_after_seconds == 60
    assert build(expires_after_seconds=MAX_EXPIRES_AFTER_SECONDS).expires_after_seconds \
        == MAX_EXPIRES_AFTER_SECONDS
    for refused in (0, -1, MAX_EXPIRES_AFTER_SECONDS + 1, 1.5, "60", True):
        assert refused_field(expires_after_seconds=refused) == "expires_after_seconds"


# -- retention ---------------------------------------------------------------


@pytest.mark.parametrize("limit", ["max_age_seconds", "max_records"])
def test_retention_limits_are_positive_or_absent(limit: str) -> None:
    assert refused_field(retention={limit: 0}) == f"retention.{limit}"
    assert getattr(build(retention={limit: None}).retention, limit) is None
    assert getattr(build(retention={limit: 3}).retention, limit) == 3


# -- placement ---------------------------------------------------------------


@pytest.mark.parametrize("regions", ["object_regions", "client_egress_regions"])
def test_object_and_egress_regions_must_not_be_empty(regions: str) -> None:
    assert refused_field(placement={"metadata_home": "eu-1", regions: []}) == "placement"


def test_metadata_home_may_not_also_be_a_replica() -> None:
    assert refused_field(placement={"metadata_home": "eu-1",
                                    "metadata_replicas": ["eu-2", "eu-1"]}) == "placement"


@pytest.mark.parametrize("placement", [
    {"metadata_home": "eu 1"},
    {"metadata_home": ""},
    {"metadata_home": "eu-1", "log_region": "x/y"},
    {"metadata_home": "eu-1", "object_regions": ["ok", "not ok"]},
    {"metadata_home": "eu-1", "client_egress_regions": ["ü"]},
    {"metadata_home": "eu-1", "metadata_replicas": ["a b"]},
])
def test_every_region_name_uses_the_id_alphabet(placement: dict[str, Any]) -> None:
    with pytest.raises(InvalidIdentifier):
        build(placement=placement)


# -- redaction ---------------------------------------------------------------


@pytest.mark.parametrize("pointer", ["/user/email", "/", "/a~0b/c~1d", "/items/0", "/a//b"])
def test_valid_json_pointers_are_accepted_as_masks(pointer: str) -> None:
    assert build(redaction={"mask": [pointer]}).redaction.mask == (pointer,)


@pytest.mark.parametrize("pointer", ["", "user/email", "/a~2", "/a~", "#/a"])
def test_invalid_json_pointers_are_refused(pointer: str) -> None:
    assert refused_field(redaction={"mask": ["/ok", pointer]}) == "redaction.mask"


def test_mask_entries_must_be_strings() -> None:
    assert refused_field(redaction={"mask": [["/a"]]}) == "redaction.mask"


# -- immutability ------------------------------------------------------------


def test_no_pin_can_be_assigned_after_creation() -> None:
    pinned = definition(consumers=["ui"])
    with pytest.raises(ValidationError):
        pinned.content_class = "other"  # type: ignore[misc]
    with pytest.raises(ValidationError):
        pinned.credit.max_unread_items = 1  # type: ignore[misc]
    with pytest.raises(ValidationError):
        pinned.placement.metadata_home = "elsewhere"  # type: ignore[misc]
    assert pinned == definition(consumers=["ui"])


def test_collections_inside_the_pins_are_immutable_tuples() -> None:
    pinned = definition(consumers=["ui"], redaction={"mask": ["/a"]},
                        authorization={"readers": ["bob"], "writers": ["alice"]})
    for collection in (pinned.consumers, pinned.redaction.mask, pinned.authorization.readers,
                       pinned.authorization.writers, pinned.placement.object_regions,
                       pinned.placement.client_egress_regions,
                       pinned.placement.metadata_replicas):
        assert isinstance(collection, tuple)


def test_building_does_not_modify_the_request() -> None:
    request: dict[str, Any] = {"stream_id": "s", "content_class": "x",
                               "placement": {"metadata_home": "us-2"}, "consumers": ["ui"]}
    build_definition(request, NODE_REGION)
    assert request == {"stream_id": "s", "content_class": "x",
                       "placement": {"metadata_home": "us-2"}, "consumers": ["ui"]}


def test_a_definition_survives_a_round_trip_through_its_wire_form() -> None:
    pinned = definition(consumers=["ui"], redaction={"mask": ["/a"]},
                        retention={"max_records": 5})
    assert build_definition(pinned.to_wire(), "elsewhere") == pinned
