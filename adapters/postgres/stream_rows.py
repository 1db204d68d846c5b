"""Reading a stream back from its row.

A stream's snapshot leaves out what the row already has (see `codec.py`): the
definition (the `definition` column). Its credit is counters (docs/adr/0047),
so a snapshot written by this release is the whole state.

A snapshot of class version 2 or older (written before migration 0015, or
during a rolling deploy by a node of the release before it) kept the sizes of
its unread records out; for those only, the load also reads them back and the
stream's head offset, and `Stream.upcast_v2_v3` turns them into counters.

Rules:
- the window of such a snapshot starts at the floor in the snapshot, which every
  release has written, not at the `unread_floor` column (docs/adr/0027);
- its head offset is that of the newest stored record with an offset, plus the
  sizes of the records above it (rows of the release before offsets have none);
  with no such record, the sizes of every retained record (a base of 0 below the
  earliest, as migration 0015 set it);
- the `unread_floor` column is still written, for the readers of older releases.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any
from uuid import UUID

from adapters.postgres.codec import AggregateCodec
from domain.stream import Stream

_STATE = "(convert_from(s.snapshot, 'UTF8')::jsonb -> 'state')"

_LEGACY = f"coalesce(({_STATE} ->> 'class_version')::int, 1) < 3"
"""SQL, over a `streams AS s` row: its snapshot predates byte offsets."""

_SNAPSHOT_FLOOR = f"coalesce(({_STATE} ->> 'unread_floor')::bigint, 0)"

_UNREAD_SIZES = f"""(SELECT coalesce(array_agg(r.size ORDER BY r.sequence), '{{}}')
    FROM records AS r WHERE r.stream = s.id AND r.sequence > {_SNAPSHOT_FLOOR})"""

_HEAD_OFFSET = """coalesce(
    (SELECT a.byte_offset + (SELECT coalesce(sum(r.size), 0) FROM records AS r
                             WHERE r.stream = s.id AND r.sequence > a.sequence)
     FROM records AS a WHERE a.stream = s.id AND a.byte_offset IS NOT NULL
     ORDER BY a.sequence DESC LIMIT 1),
    (SELECT coalesce(sum(r.size), 0) FROM records AS r WHERE r.stream = s.id))"""


def legacy_columns(unless: str = "false") -> str:
    """SQL, over a `streams AS s` row: `unread_sizes` and `head_offset`, NULL unless its
    snapshot predates byte offsets (and NULL whenever `unless` holds)."""
    return (f"CASE WHEN {unless} THEN NULL WHEN {_LEGACY} THEN {_UNREAD_SIZES} END "
            "AS unread_sizes,\n"
            f"       CASE WHEN {unless} THEN NULL WHEN {_LEGACY} THEN {_HEAD_OFFSET} END "
            "AS head_offset")


ROW_COLUMNS = f"s.snapshot_topic, s.snapshot, s.definition, {legacy_columns()}"
"""SQL: what `stream_from_row` needs besides the id and version."""


def stream_from_row(codec: AggregateCodec, stream_id: UUID, version: int,
                    row: Mapping[str, Any]) -> Stream:
    sizes = row["unread_sizes"]
    legacy = None if sizes is None else (list(sizes), int(row["head_offset"]))
    return codec.load_stream(stream_id, version, row["snapshot_topic"], row["snapshot"],
                             row["definition"], legacy)
