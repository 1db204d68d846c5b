"""The records a group writes, in the few values the driver encodes cheaply.

The driver pays for every element of an array it encodes (a type check or three in
Python), so a column of one value per record travels as ONE text that Postgres splits.

Rules:
- records of one stream with consecutive sequences that share an append time and a
  content type form a run; what they share travels once per run (its first sequence
  too: a record's is the run's plus its place in it), and each record names its run;
- the numbers of each record (run, size, byte offset) travel as array literals (text),
  an absent offset as NULL;
- the JSON payloads travel as one text joined by U+001E (`PAYLOAD_SEPARATOR`): JSON never holds
  a raw control character (it escapes them), and a payload that does is refused before
  its unit of work is accepted (`record_rows.check_storable`), so the separator cannot
  occur inside one; a record without a payload is the empty text, which is no JSON;
- a column every record of the group leaves empty (keys, data, objects) travels as an
  empty array: `unnest` of several arrays pads the shorter ones with NULL.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from operator import attrgetter
from typing import Any
from uuid import UUID

import msgspec

from adapters.postgres.record_rows import PAYLOAD_SEPARATOR
from application.ports.records import StoredRecord

INSERT_RECORDS = """
    INSERT INTO records (stream, sequence, content_type, appended_at, size, payload, data,
                         object_id, object_size, object_sha256, object_content_type,
                         idempotency_key, byte_offset)
    SELECT ({}::uuid[])[r.run], ({}::int8[])[r.run] + (r.n - ({}::int4[])[r.run]),
           ({}::text[])[r.run], ({}::timestamptz[])[r.run], r.size, r.payload::json, r.data,
           r.object_id, r.object_size, r.object_sha256, r.object_content_type,
           r.idempotency_key, r.byte_offset
    FROM unnest({}::text::int4[], {}::text::int4[], {}::text::int8[],
                string_to_array({}::text, E'\\x1e', ''), {}::text[], {}::bytea[],
                {}::text[], {}::int8[], {}::text[], {}::text[])
         WITH ORDINALITY
         AS r(run, size, byte_offset, payload, idempotency_key, data, object_id, object_size,
              object_sha256, object_content_type, n)"""
"""The `new_records` part of the group's statement, placeholders in `arguments()`'s order."""


class RecordColumns:
    """The records of a group, column by column (see the module rules)."""

    __slots__ = (
        "_count",
        "_data",
        "_keys",
        "_objects",
        "_offsets",
        "_payloads",
        "_run_firsts",
        "_run_lengths",
        "_run_starts",
        "_run_streams",
        "_run_times",
        "_run_types",
        "_sizes",
    )

    def __init__(self) -> None:
        self._count = 0
        self._run_streams: list[UUID] = []
        self._run_types: list[str] = []
        self._run_times: list[datetime] = []
        self._run_firsts: list[int] = []
        self._run_starts: list[int] = []
        self._run_lengths: list[int] = []
        self._sizes: list[int] = []
        self._offsets: list[int | None] = []
        self._payloads: list[str] = []
        self._keys: list[str | None] = []
        self._data: list[bytes | None] = []
        self._objects: list[Any] = []

    def __bool__(self) -> bool:
        return self._count > 0

    def add(self, stream_id: UUID, records: Sequence[StoredRecord]) -> None:
        """The records staged on one stream, in ascending sequence order."""
        if not records:
            return
        if _one_run(records):
            self._run(stream_id, records[0], len(records))
        else:
            first, length = records[0], 0
            for record in records:
                if record.appended_at is not first.appended_at \
                        or record.content_type != first.content_type \
                        or record.sequence != first.sequence + length:
                    self._run(stream_id, first, length)
                    first, length = record, 0
                length += 1
            self._run(stream_id, first, length)
        self._sizes += [record.size for record in records]
        self._offsets += [record.offset for record in records]
        self._payloads += [record.payload_json or "" for record in records]
        self._keys += [record.idempotency_key for record in records]
        self._data += [record.data for record in records]
        self._objects += [record.object for record in records]

    def _run(self, stream_id: UUID, first: StoredRecord, length: int) -> None:
        self._run_streams.append(stream_id)
        self._run_types.append(first.content_type)
        self._run_times.append(first.appended_at)
        self._run_firsts.append(first.sequence)
        self._run_starts.append(self._count + 1)
        self._run_lengths.append(length)
        self._count += length

    def arguments(self) -> list[Any]:
        """The values of `INSERT_RECORDS`'s placeholders."""
        objects = [] if _empty(self._objects) else self._objects
        runs = "".join(f"{run}," * length
                       for run, length in enumerate(self._run_lengths, start=1))
        return [self._run_streams, self._run_firsts, self._run_starts, self._run_types,
                self._run_times, "{" + runs[:-1] + "}", _array_text(self._sizes),
                _array_text(self._offsets), PAYLOAD_SEPARATOR.join(self._payloads),
                [] if _empty(self._keys) else self._keys,
                [] if _empty(self._data) else self._data,
                [ref and ref.object_id for ref in objects],
                [ref and ref.size for ref in objects],
                [ref and ref.sha256 for ref in objects],
                [ref and ref.content_type for ref in objects]]


def _one_run(records: Sequence[StoredRecord]) -> bool:
    """Whether the records (ascending) are one run: dense, of one append time and type."""
    times = list(map(_APPENDED_AT, records))
    types = list(map(_CONTENT_TYPE, records))
    return (records[-1].sequence - records[0].sequence == len(records) - 1
            and times.count(times[0]) == len(times) and types.count(types[0]) == len(types))


_APPENDED_AT = attrgetter("appended_at")
_CONTENT_TYPE = attrgetter("content_type")


def _empty(column: list[Any]) -> bool:
    return column.count(None) == len(column)


def _array_text(numbers: list[Any]) -> str:
    """The Postgres array literal of integers and Nones (NULL)."""
    return "{" + _encode(numbers)[1:-1].decode() + "}"


_encode = msgspec.json.Encoder().encode
