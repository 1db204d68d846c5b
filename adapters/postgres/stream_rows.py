"""Reading a stream back from its row.

A stream's snapshot leaves out what the row already has or can give cheaply
(see `codec.py`): the definition (the `definition` column) and the sizes of its
unread records (the `records` rows above the row's `unread_floor`). Rewritten
with every commit, the sizes would make each append cost as much as the unread
window is long; read back, they cost one indexed range scan on a cache miss.

Rules:
- the window starts at the floor in the snapshot, which every release has
  written, not at the `unread_floor` column: writers of releases before
  migration 0006 update the snapshot without the column, so during a rolling
  deploy the column can lag (an old node's ack leaves it where it was), and a
  window read from it would hold records already acked (docs/adr/0027);
- the column is still written, for the readers of the release before this one.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any
from uuid import UUID

from adapters.postgres.codec import AggregateCodec
from domain.stream import Stream

SNAPSHOT_FLOOR = """coalesce((convert_from(s.snapshot, 'UTF8')::jsonb -> 'state'
    ->> 'unread_floor')::bigint, 0)"""
"""SQL, over a `streams AS s` row: the unread floor its snapshot holds."""

UNREAD_SIZES = f"""(SELECT coalesce(array_agg(r.size ORDER BY r.sequence), '{{}}')
    FROM records AS r WHERE r.stream = s.id AND r.sequence > {SNAPSHOT_FLOOR})"""
"""SQL, over a `streams AS s` row: the sizes of its unread records, oldest first."""

ROW_COLUMNS = f"s.snapshot_topic, s.snapshot, s.definition, {UNREAD_SIZES} AS unread_sizes"
"""SQL: what `stream_from_row` needs besides the id and version."""


def stream_from_row(codec: AggregateCodec, stream_id: UUID, version: int,
                    row: Mapping[str, Any]) -> Stream:
    return codec.load_stream(stream_id, version, row["snapshot_topic"], row["snapshot"],
                             row["definition"], list(row["unread_sizes"]))
