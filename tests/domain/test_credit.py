"""The credit decision: what may be appended now, decided from durable counts only."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from domain.credit import CreditVerdict, Usage, decide_credit
from domain.pins import CreditPins

PINS = CreditPins(max_unread_items=10, max_unread_bytes=1000, max_total_items=50,
                  max_total_bytes=5000)
EMPTY = Usage(unread_items=0, unread_bytes=0, total_items=0, total_bytes=0)


@pytest.mark.parametrize(("usage", "items", "size", "verdict"), [
    (EMPTY, 1, 10, CreditVerdict.GRANTED),
    (EMPTY, 10, 1000, CreditVerdict.GRANTED),  # exactly the unread ceiling fits
    (EMPTY, 11, 10, CreditVerdict.NEVER_FITS),
    (EMPTY, 1, 1001, CreditVerdict.NEVER_FITS),
    (Usage(9, 0, 9, 0), 1, 0, CreditVerdict.GRANTED),
    (Usage(10, 0, 10, 0), 1, 0, CreditVerdict.UNREAD_FULL),
    (Usage(0, 999, 1, 999), 1, 2, CreditVerdict.UNREAD_FULL),
    (Usage(0, 0, 50, 0), 1, 0, CreditVerdict.QUOTA_EXHAUSTED),
    (Usage(0, 0, 49, 4999), 1, 1, CreditVerdict.GRANTED),  # exactly the total ceiling fits
    (Usage(0, 0, 1, 4999), 1, 2, CreditVerdict.QUOTA_EXHAUSTED),
    # Both ceilings full: acking can never make room, so the quota answer wins.
    (Usage(10, 1000, 50, 5000), 1, 1, CreditVerdict.QUOTA_EXHAUSTED),
    # A batch over the unread ceiling never fits, whatever the quota says.
    (Usage(0, 0, 50, 5000), 11, 1, CreditVerdict.NEVER_FITS),
])
def test_credit_verdicts(usage: Usage, items: int, size: int, verdict: CreditVerdict) -> None:
    assert decide_credit(PINS, usage, items, size) is verdict


@given(st.integers(0, 10), st.integers(0, 1000), st.integers(0, 50), st.integers(0, 5000),
       st.integers(1, 12), st.integers(0, 1100))
def test_granted_means_every_ceiling_holds_after_the_append(
        unread_items: int, unread_bytes: int, total_items: int, total_bytes: int,
        items: int, size: int) -> None:
    usage = Usage(unread_items, unread_bytes, total_items, total_bytes)
    verdict = decide_credit(PINS, usage, items, size)
    fits = (unread_items + items <= 10 and unread_bytes + size <= 1000
            and total_items + items <= 50 and total_bytes + size <= 5000)
    assert (verdict is CreditVerdict.GRANTED) == fits
    if verdict is CreditVerdict.UNREAD_FULL:
        # Backpressure is only answered when acking could make room.
        assert items <= 10 and size <= 1000
        assert decide_credit(PINS, Usage(0, 0, total_items, total_bytes), items, size) is (
            CreditVerdict.GRANTED)
