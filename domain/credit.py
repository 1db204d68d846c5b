"""Producer credit: may a batch of `items` records totalling `size` bytes be appended now?

Decided from durable counts only: what is unread after the slowest declared
consumer's ack (a stream without declared consumers has no unread ceiling) and
what the stream has stored over its lifetime.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from domain.pins import CreditPins


class CreditVerdict(Enum):
    GRANTED = "granted"
    UNREAD_FULL = "unread_full"
    QUOTA_EXHAUSTED = "quota_exhausted"
    NEVER_FITS = "never_fits"


@dataclass(frozen=True)
class Usage:
    unread_items: int
    unread_bytes: int
    total_items: int
    total_bytes: int


def decide_credit(pins: CreditPins, usage: Usage, items: int, size: int,
                  gated: bool = True, stored: int | None = None) -> CreditVerdict:
    """The lifetime quota wins over the unread ceiling (a full quota never frees up by
    acking), and the unread ceiling binds only a stream `gated` by declared consumers.

    `size` is what the batch weighs unread; `stored` (default: `size`) what it adds to
    the stream's total bytes."""
    if gated and (items > pins.max_unread_items or size > pins.max_unread_bytes):
        return CreditVerdict.NEVER_FITS
    if (usage.total_items + items > pins.max_total_items
            or usage.total_bytes + (size if stored is None else stored) > pins.max_total_bytes):
        return CreditVerdict.QUOTA_EXHAUSTED
    if gated and (usage.unread_items + items > pins.max_unread_items
            or usage.unread_bytes + size > pins.max_unread_bytes):
        return CreditVerdict.UNREAD_FULL
    return CreditVerdict.GRANTED
