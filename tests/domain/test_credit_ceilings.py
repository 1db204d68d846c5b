"""Credit pins stay within the node's ceilings (checked at creation) and within a bigint."""

from __future__ import annotations

from dataclasses import fields

import pytest
from hypothesis import given
from hypothesis import strategies as st

from domain.credit_ceilings import DEFAULT_CEILINGS, INT64_MAX, CreditCeilings
from domain.definition import StreamDefinition, build_definition
from domain.errors import InvalidDefinition
from tests.domain.factories import NODE_REGION

PINS = [ceiling.name for ceiling in fields(CreditCeilings)]


def build(credit: dict[str, int], ceilings: CreditCeilings = DEFAULT_CEILINGS) -> StreamDefinition:
    return build_definition({"stream_id": "s", "content_class": "x", "credit": credit},
                            NODE_REGION, ceilings)


@pytest.mark.parametrize("pin", PINS)
def test_a_pin_above_its_ceiling_is_refused_with_the_field_and_the_limit(pin: str) -> None:
    limit = getattr(DEFAULT_CEILINGS, pin)
    with pytest.raises(InvalidDefinition) as refused:
        build({pin: limit + 1})
    assert refused.value.extra["field"] == f"credit.{pin}"
    # Where the default ceiling is also the absolute maximum, the type check answers first.
    assert refused.value.extra.get("limit", limit) == limit
    build({pin: limit})


@pytest.mark.parametrize("pin", ["max_unread_bytes", "max_total_items", "max_total_bytes"])
def test_no_pin_exceeds_a_bigint_whatever_the_ceilings(pin: str) -> None:
    unbounded = CreditCeilings(**{name: 10**40 for name in PINS})
    with pytest.raises(InvalidDefinition) as refused:
        build({pin: 10**30}, unbounded)
    assert refused.value.extra["field"] == f"credit.{pin}"
    build({pin: INT64_MAX}, unbounded)


def test_a_definition_without_credit_fits_the_lowest_ceilings_settings_allow() -> None:
    lowest = CreditCeilings(max_unread_items=1000, max_unread_bytes=8 * 1024**2,
                            max_total_items=100_000, max_total_bytes=1024**3,
                            max_open_objects=100)
    build({}, lowest)


@given(st.dictionaries(st.sampled_from(PINS), st.integers(1, 10**12), max_size=5))
def test_what_is_accepted_is_within_every_ceiling(credit: dict[str, int]) -> None:
    try:
        definition = build(credit)
    except InvalidDefinition:
        assert any(value > getattr(DEFAULT_CEILINGS, pin) for pin, value in credit.items())
        return
    for pin in PINS:
        assert getattr(definition.credit, pin) <= getattr(DEFAULT_CEILINGS, pin)
