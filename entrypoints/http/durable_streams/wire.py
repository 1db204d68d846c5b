"""The protocol's header and parameter rules (ADR 0041), pure: offsets, TTL, expiry,
producer headers, content types, cursors, ETags, and Runnel's `Runnel-Definition`."""

from __future__ import annotations

import json
import random
import re
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from application.durable_streams.definition import check_fields
from application.ports.durable_streams import Producer

OFFSET_DIGITS = 16
BEGINNING = "-1"
NOW = "now"
_OFFSET = re.compile(rf"^(\d{{{OFFSET_DIGITS}}})_0{{{OFFSET_DIGITS}}}$")
_TTL = re.compile(r"^(0|[1-9]\d{0,17})$")
_INTEGER = re.compile(r"^(0|[1-9]\d{0,15})$")
MAX_SAFE_INTEGER = 2**53 - 1
CURSOR_EPOCH = datetime.fromisoformat("2024-10-09T00:00:00+00:00")
CURSOR_INTERVAL_SECONDS = 20
DEFAULT_CONTENT_TYPE = "application/octet-stream"
MAX_TTL_SECONDS = 10**10
"""About 300 years: beyond it a TTL is refused rather than overflowing the clock."""
MAX_HEADER_TEXT = 256
"""Content types, `Stream-Seq` and producer ids are stored: no longer than this."""
MAX_DEFINITION_TEXT = 4096
"""The longest `Runnel-Definition` header a PUT may carry (half the head a request may have)."""


class BadRequest(Exception):
    """400 with this message."""


def offset_of(sequence: int) -> str:
    """The offset after record `sequence` (0: before the first): zero-padded, so that
    lexicographic order is sequence order and a read at `o` returns records after it.
    The second part is a position inside a record, always 0 (a record boundary); it keeps
    the shape the reference server uses, whose zero offset clients write down."""
    return f"{sequence:0{OFFSET_DIGITS}d}_{0:0{OFFSET_DIGITS}d}"


def parse_offset(values: list[str]) -> int | str:
    """A sequence, or NOW. No offset is the beginning."""
    if not values:
        return 0
    if len(values) > 1:
        raise BadRequest("offset given more than once")
    value = values[0]
    if value == BEGINNING:
        return 0
    if value == NOW:
        return NOW
    match = _OFFSET.fullmatch(value)
    if match is None:
        raise BadRequest("malformed offset")
    return int(match.group(1))


def parse_ttl(value: str | None) -> int | None:
    if value is None:
        return None
    if _TTL.fullmatch(value) is None:
        raise BadRequest("Stream-TTL must be a non-negative decimal integer")
    if int(value) > MAX_TTL_SECONDS:
        raise BadRequest(f"Stream-TTL must be at most {MAX_TTL_SECONDS}")
    return int(value)


def parse_expires_at(value: str | None) -> datetime | None:
    if value is None:
        return None
    text = value.strip()
    if not re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)", text,
                        re.IGNORECASE):
        raise BadRequest("Stream-Expires-At must be an RFC 3339 timestamp")
    try:
        return datetime.fromisoformat(text.upper().replace("Z", "+00:00"))
    except ValueError:
        raise BadRequest("Stream-Expires-At must be an RFC 3339 timestamp") from None


def parse_producer(producer_id: str | None, epoch: str | None,
                   seq: str | None) -> Producer | None:
    given = [value is not None for value in (producer_id, epoch, seq)]
    if not any(given):
        return None
    if not all(given) or not producer_id:
        raise BadRequest("Producer-Id, Producer-Epoch and Producer-Seq go together")
    bounded(producer_id, "Producer-Id")
    assert epoch is not None and seq is not None
    return Producer(producer_id, _integer(epoch, "Producer-Epoch"), _integer(seq, "Producer-Seq"))


def _integer(value: str, name: str) -> int:
    if _INTEGER.fullmatch(value) is None or int(value) > MAX_SAFE_INTEGER:
        raise BadRequest(f"{name} must be a non-negative integer")
    return int(value)


def parse_definition(value: str | None) -> dict[str, Any] | None:
    """`Runnel-Definition`: the creator's definition fields, one JSON object (ADR 0070)."""
    if value is None:
        return None
    if len(value) > MAX_DEFINITION_TEXT:
        raise BadRequest(f"Runnel-Definition is longer than {MAX_DEFINITION_TEXT} characters")
    try:
        fields = json.loads(value)
    except ValueError:
        raise BadRequest("Runnel-Definition is not JSON") from None
    return check_fields(fields, "Runnel-Definition")


def bounded(value: str | None, name: str) -> str | None:
    if value is not None and len(value) > MAX_HEADER_TEXT:
        raise BadRequest(f"{name} is longer than {MAX_HEADER_TEXT} characters")
    return value


def is_closing(value: str | None) -> bool:
    return value is not None and value.strip().lower() == "true"


def media_type(content_type: str | None) -> str:
    """The comparable part of a content type: its media type, lower-cased."""
    return (content_type or "").split(";", 1)[0].strip().lower()


def is_json(content_type: str) -> bool:
    return media_type(content_type) == "application/json"


def is_text(content_type: str) -> bool:
    return is_json(content_type) or media_type(content_type).startswith("text/")


@dataclass(frozen=True)
class Cursor:
    value: int

    @classmethod
    def next(cls, now: datetime, echoed: str | None) -> Cursor:
        """The current interval; strictly above an echoed cursor that is not behind it."""
        interval = int((now - CURSOR_EPOCH).total_seconds() // CURSOR_INTERVAL_SECONDS)
        if echoed is not None and echoed.isdigit() and int(echoed) >= interval:
            return cls(int(echoed) + random.randint(1, 3600 // CURSOR_INTERVAL_SECONDS))
        return cls(interval)

    def __str__(self) -> str:
        return str(self.value)


def etag(run_id: str, start: int, end: int, closed: bool) -> str:
    return f'"{run_id}:{start}:{end}{":c" if closed else ""}"'


def parse_fork(forked_from: str | None, offset: str | None, sub_offset: str | None,
               prefix: str) -> tuple[str | None, int | None, int]:
    """(source path, offset or None for the source's tail, sub-offset)."""
    if forked_from is None:
        if offset is not None or sub_offset is not None:
            raise BadRequest("Stream-Fork-Offset and Stream-Fork-Sub-Offset need "
                             "Stream-Forked-From")
        return None, None, 0
    source = forked_from.strip().removeprefix(prefix).removeprefix("/")
    sequence = None
    if offset is not None:
        parsed = parse_offset([offset])
        if parsed == NOW:
            raise BadRequest("Stream-Fork-Offset must be an offset")
        assert isinstance(parsed, int)
        sequence = parsed
    sub = 0
    if sub_offset is not None:
        if _INTEGER.fullmatch(sub_offset.strip()) is None:
            raise BadRequest("Stream-Fork-Sub-Offset must be a non-negative integer")
        sub = int(sub_offset)
        if sub > 0 and offset is None:
            raise BadRequest("Stream-Fork-Sub-Offset needs Stream-Fork-Offset")
    return source, sequence, sub
