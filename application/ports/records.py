"""Committed records as readers see them, and the port that reads them."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from functools import cached_property
from typing import Any, Protocol

from domain.canonical_json import compact_json
from domain.identifiers import StreamKey
from domain.records import Draft, ObjectRef


@dataclass(frozen=True)
class StoredRecord:
    """A committed record as readers see it (bodies already redacted).

    A JSON payload is held as its canonical text, exactly as stored (`payload_json`, None
    when the record has another body): readers hand that text on as it is, and only a
    caller that needs the value parses it (`payload`, parsed once, on first use; ADR 0048).
    """

    sequence: int
    content_type: str
    appended_at: datetime
    size: int
    payload_json: str | None = None
    data: bytes | None = None
    object: ObjectRef | None = None
    idempotency_key: str | None = None
    offset: int | None = field(default=None, compare=False, repr=False)
    """The stream's byte offset through this record, for storage (`Stream`); readers
    are not given it."""

    @property
    def has_payload(self) -> bool:
        return self.payload_json is not None

    @cached_property
    def payload(self) -> Any:
        """The payload as a value (None when there is none, or when it is JSON `null`)."""
        return json.loads(self.payload_json) if self.payload_json is not None else None

    @classmethod
    def from_draft(cls, sequence: int, draft: Draft, appended_at: datetime,
                   offset: int | None = None) -> StoredRecord:
        """The record a validated draft becomes once `sequence` (and its byte offset) is
        assigned to it: what `cls(...)` with these fields makes, its instance dict filled in
        one step. One is made per appended record, and the frozen `__init__` (one
        `object.__setattr__` a field) costs more (figures: ADR 0049); the fields' names are
        checked against this dict's keys by `tests/application/test_stored_record.py`."""
        text = draft.payload_json
        if text is None and draft.has_payload:
            text = compact_json(draft.payload).decode()
        record = _new(cls)
        vars(record).update(
            sequence=sequence, content_type=draft.content_type, appended_at=appended_at,
            size=draft.size, payload_json=text, data=draft.data, object=draft.object,
            idempotency_key=draft.idempotency_key, offset=offset)
        return record


_new = object.__new__


@dataclass(frozen=True)
class RecordPage:
    """Records above a cursor, with the stream's status read in the same snapshot."""

    records: Sequence[StoredRecord]
    head: int
    earliest: int
    closed: bool


class RecordReader(Protocol):
    """Reads committed records (never uncommitted ones) in ascending sequence order."""

    async def read_page(self, key: StreamKey, after: int, limit: int) -> RecordPage:
        """Up to `limit` records with `sequence > after`, ascending, and the status
        of the same snapshot; raises `NotFound` when the stream does not exist."""
        ...

    async def newest_appended_before(self, key: StreamKey, cutoff: datetime) -> int:
        """The highest sequence appended at or before `cutoff` (0 when none)."""
        ...
