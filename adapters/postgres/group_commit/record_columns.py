"""The records a group writes, in the few values the driver encodes cheaply.

The driver pays for every element of an array it encodes (a type check or three in
Python), so a column of one value per record travels as ONE text that Postgres splits.

Rules:
- records of one stream that share an append time and a content type form a run; what
  they share travels once per run, and each record names its run by number;
- the numbers of each record (run, sequence, size, byte offset) travel as comma-joined
  texts, an absent offset as the empty text (NULL);
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
from typing import Any
from uuid import UUID

from adapters.postgres.record_rows import PAYLOAD_SEPARATOR
from application.ports.records import StoredRecord

INSERT_RECORDS = """
    INSERT INTO records (stream, sequence, content_type, appended_at, size, payload, data,
                         object_id, object_size, object_sha256, object_content_type,
                         idempotency_key, byte_offset)
    SELECT ({}::uuid[])[r.run], r.sequence, ({}::text[])[r.run], ({}::timestamptz[])[r.run],
           r.size, r.payload::json, r.data, r.object_id, r.object_size, r.object_sha256,
           r.object_content_type, r.idempotency_key, r.byte_offset
    FROM unnest(string_to_array({}::text, ',')::int4[], string_to_array({}::text, ',')::int8[],
                string_to_array({}::text, ',')::int4[], string_to_array({}::text, ',', '')::int8[],
                string_to_array({}::text, E'\\x1e', ''), {}::text[], {}::bytea[],
                {}::text[], {}::int8[], {}::text[], {}::text[])
         AS r(run, sequence, size, byte_offset, payload, idempotency_key, data, object_id,
              object_size, object_sha256, object_content_type)"""
"""The `new_records` part of the group's statement, placeholders in `arguments()`'s order."""


class RecordColumns:
    """The records of a group, column by column (see the module rules)."""

    __slots__ = (
        "_data",
        "_keys",
        "_objects",
        "_offsets",
        "_payloads",
        "_run_streams",
        "_run_times",
        "_run_types",
        "_runs",
        "_sequences",
        "_sizes",
    )

    def __init__(self) -> None:
        self._run_streams: list[UUID] = []
        self._run_types: list[str] = []
        self._run_times: list[datetime] = []
        self._runs: list[int] = []
        self._sequences: list[int] = []
        self._sizes: list[int] = []
        self._offsets: list[int | None] = []
        self._payloads: list[str] = []
        self._keys: list[str | None] = []
        self._data: list[bytes | None] = []
        self._objects: list[Any] = []

    def __bool__(self) -> bool:
        return bool(self._runs)

    def add(self, stream_id: UUID, records: Sequence[StoredRecord]) -> None:
        """The records staged on one stream, in sequence order."""
        runs = self._runs
        run = 0
        moment: datetime | None = None
        content_type = ""
        for record in records:
            if record.appended_at is not moment or record.content_type != content_type:
                moment, content_type = record.appended_at, record.content_type
                self._run_streams.append(stream_id)
                self._run_types.append(content_type)
                self._run_times.append(moment)
                run = len(self._run_streams)
            runs.append(run)
        self._sequences += [record.sequence for record in records]
        self._sizes += [record.size for record in records]
        self._offsets += [record.offset for record in records]
        self._payloads += [record.payload_json or "" for record in records]
        self._keys += [record.idempotency_key for record in records]
        self._data += [record.data for record in records]
        self._objects += [record.object for record in records]

    def arguments(self) -> list[Any]:
        """The values of `INSERT_RECORDS`'s placeholders."""
        objects = [] if _empty(self._objects) else self._objects
        offsets = self._offsets
        return [self._run_streams, self._run_types, self._run_times, _joined(self._runs),
                _joined(self._sequences), _joined(self._sizes),
                _joined(offsets) if None not in offsets else
                ",".join("" if offset is None else str(offset) for offset in offsets),
                PAYLOAD_SEPARATOR.join(self._payloads),
                [] if _empty(self._keys) else self._keys,
                [] if _empty(self._data) else self._data,
                [ref and ref.object_id for ref in objects],
                [ref and ref.size for ref in objects],
                [ref and ref.sha256 for ref in objects],
                [ref and ref.content_type for ref in objects]]


def _empty(column: list[Any]) -> bool:
    return column.count(None) == len(column)


def _joined(numbers: list[Any]) -> str:
    return ",".join(map(str, numbers))
