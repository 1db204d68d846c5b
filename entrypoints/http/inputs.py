"""Query and header inputs, parsed strictly before any work is done.

Cursors are non-negative integers of at most 19 digits; anything else
(including a garbage `Last-Event-ID`) is 400 `invalid_cursor`, never a 500; a `limit`
that is not a non-negative integer is 400 `invalid_limit`; a `wait` that is not a
non-negative decimal number of seconds is 400 `invalid_wait` (its bound is the reading use
case's rule).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from application.reading import DEFAULT_LIMIT
from domain.cursor import parse_cursor
from domain.errors import InvalidLimit, InvalidRecord, InvalidWait
from domain.masking import MAX_JSON_DEPTH
from domain.records import Submitted
from domain.run_cursor import RunCursor

MAX_LIMIT_DIGITS = 7
_WAIT = re.compile(r"[0-9]{1,6}(\.[0-9]{1,6})?")


def subscribe_cursor(after: str | None, last_event_id: str | None) -> int:
    """`?after=` wins over `Last-Event-ID` (which is then not even parsed); neither means 0."""
    if after is not None:
        return parse_cursor(after, "after") or 0
    if last_event_id is not None:
        return parse_cursor(last_event_id, "Last-Event-ID") or 0
    return 0


def run_subscribe_cursor(after: str | None, last_event_id: str | None) -> RunCursor:
    """The compound cursor of a run subscription, by the same precedence as
    `subscribe_cursor`; its bounds are checked before it is parsed (`RunCursor.parse`)."""
    if after is not None:
        return RunCursor.parse(after, "after")
    if last_event_id is not None:
        return RunCursor.parse(last_event_id, "Last-Event-ID")
    return RunCursor()


def read_cursor(after: str | None) -> int:
    return parse_cursor(after, "after") or 0


def wait_seconds(raw: str | None) -> float:
    """The long-poll wait as given (absent: 0, no wait)."""
    if raw is None:
        return 0.0
    text = raw.strip()
    if not _WAIT.fullmatch(text):
        raise InvalidWait("wait must be a number of seconds", field="wait")
    return float(text)


def page_limit(raw: str | None) -> int:
    """The page size as given; its range (1–1000) is the reading use case's rule."""
    if raw is None:
        return DEFAULT_LIMIT
    text = raw.strip()
    if not text.isascii() or not text.isdigit() or len(text) > MAX_LIMIT_DIGITS:
        raise InvalidLimit("limit must be an integer between 1 and 1000", field="limit")
    return int(text)


def check_record_depth(records: Sequence[Any]) -> None:
    """Refuse (422 `invalid_record`) a record nested deeper than `MAX_JSON_DEPTH`.

    Iterative, so the check itself cannot hit the recursion limit. A typed record
    (`Submitted`) is the record object around its payload; only a payload that is an
    object or an array is walked, and one whose members are all scalars is not walked
    further (it is two levels deep).
    """
    pending: list[tuple[Any, int]] = []
    for record in records:
        if type(record) is not Submitted:
            pending.append((record, 1))
            continue
        payload = record.payload
        kind = type(payload)
        if kind is dict:
            if _SCALARS.issuperset(map(type, payload.values())):
                continue
        elif kind is list:
            if _SCALARS.issuperset(map(type, payload)):
                continue
        elif not isinstance(payload, dict | list):
            continue
        pending.append((payload, 2))
    while pending:
        value, depth = pending.pop()
        if depth > MAX_JSON_DEPTH + 1:  # +1: the record object around the payload
            raise InvalidRecord(f"a record may nest at most {MAX_JSON_DEPTH} levels deep",
                                limit=MAX_JSON_DEPTH)
        if isinstance(value, dict):
            pending.extend((item, depth + 1) for item in value.values())
        elif isinstance(value, list):
            pending.extend((item, depth + 1) for item in value)


_SCALARS = frozenset({str, int, float, bool, type(None)})
