"""Retention: how far a stream may be pruned, from its pins and a given `now`."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from domain.pins import RetentionPins
from domain.retention import age_cutoff, prune_through

NOW = datetime(2030, 6, 1, tzinfo=UTC)


def test_no_age_limit_has_no_cutoff() -> None:
    assert age_cutoff(RetentionPins(), NOW) is None


def test_the_age_cutoff_is_now_minus_the_limit() -> None:
    assert age_cutoff(RetentionPins(max_age_seconds=60), NOW) == NOW - timedelta(seconds=60)


@pytest.mark.parametrize(("pins", "head", "expired", "through"), [
    (RetentionPins(), 100, 50, 0),  # no limits: nothing pruned, whatever is old
    (RetentionPins(max_records=10), 100, 0, 90),  # keep the newest 10
    (RetentionPins(max_records=10), 5, 0, 0),  # fewer records than the limit
    (RetentionPins(max_records=10), 10, 0, 0),
    (RetentionPins(max_age_seconds=60), 100, 40, 40),
    (RetentionPins(max_age_seconds=60), 100, 0, 0),
    (RetentionPins(max_age_seconds=60), 10, 40, 10),  # never beyond head
    (RetentionPins(max_age_seconds=60, max_records=10), 100, 40, 90),  # the stricter wins
    (RetentionPins(max_age_seconds=60, max_records=80), 100, 40, 40),
    (RetentionPins(max_records=10), 100, 95, 90),  # age evidence ignored without an age pin
])
def test_prune_through(pins: RetentionPins, head: int, expired: int, through: int) -> None:
    assert prune_through(pins, head, expired) == through


@given(st.one_of(st.none(), st.integers(1, 50)), st.one_of(st.none(), st.integers(1, 50)),
       st.integers(0, 100), st.integers(0, 150))
def test_prune_through_stays_between_zero_and_head_and_keeps_max_records(
        max_age: int | None, max_records: int | None, head: int, expired: int) -> None:
    pins = RetentionPins(max_age_seconds=max_age, max_records=max_records)
    through = prune_through(pins, head, expired)
    assert 0 <= through <= head
    if max_records is not None and (max_age is None or expired <= head - max_records):
        assert head - through == min(head, max_records)
