"""Retention: how far a stream may be pruned, from its pins and a given `now`."""

from __future__ import annotations

from datetime import datetime, timedelta

from domain.pins import RetentionPins


def age_cutoff(pins: RetentionPins, now: datetime) -> datetime | None:
    """Records appended at or before this instant are past their age limit."""
    if pins.max_age_seconds is None:
        return None
    return now - timedelta(seconds=pins.max_age_seconds)


def prune_through(pins: RetentionPins, head: int, expired_through: int) -> int:
    """The highest sequence retention removes (0: none).

    `expired_through` is the newest sequence appended at or before the age
    cutoff (0 when none or no age limit).
    """
    by_count = head - pins.max_records if pins.max_records is not None else 0
    by_age = expired_through if pins.max_age_seconds is not None else 0
    return max(0, by_count, min(by_age, head))
