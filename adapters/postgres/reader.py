"""The Postgres `RecordReader`: committed records above a cursor, and the retention probe."""

from __future__ import annotations

from datetime import datetime

import asyncpg

from adapters.postgres.ids import stream_id
from adapters.postgres.record_rows import RECORD_COLUMNS, record_from_row
from application.ports.records import RecordPage
from domain.errors import NotFound
from domain.identifiers import StreamKey

# One statement, hence one snapshot: the page and the status it is reported with
# can never disagree (a record above `head` is never returned, nor a pruned one).
_READ_PAGE = f"""
SELECT s.head AS stream_head, s.earliest AS stream_earliest, s.closed AS stream_closed, r.*
FROM streams AS s
LEFT JOIN LATERAL (
    SELECT {RECORD_COLUMNS} FROM records
    WHERE stream = s.id AND sequence > $2 ORDER BY sequence LIMIT $3
) AS r ON true
WHERE s.id = $1
ORDER BY r.sequence
"""

# Records are appended in clock order, so the records appended at or before the
# cutoff are a prefix of the stream: scan it by sequence until the first younger one.
_NEWEST_BEFORE = """
WITH first_younger AS (
    SELECT sequence FROM records WHERE stream = $1 AND appended_at > $2
    ORDER BY sequence LIMIT 1
), bounds AS (
    SELECT min(sequence) AS oldest, max(sequence) AS newest FROM records WHERE stream = $1
)
SELECT CASE
    WHEN b.oldest IS NULL THEN 0
    WHEN f.sequence IS NULL THEN b.newest
    WHEN f.sequence = b.oldest THEN 0
    ELSE f.sequence - 1
END
FROM bounds AS b LEFT JOIN first_younger AS f ON true
"""


_INT8_MAX = 2**63 - 1


class PostgresRecordReader:
    """Implements `RecordReader`."""

    def __init__(self, pool: asyncpg.Pool) -> None:
        self._pool = pool

    async def read_page(self, key: StreamKey, after: int, limit: int) -> RecordPage:
        rows = await self._pool.fetch(_READ_PAGE, stream_id(key), min(after, _INT8_MAX),
                                      max(limit, 0))
        if not rows:
            raise NotFound("stream not found")
        first = rows[0]
        records = tuple(record_from_row(row) for row in rows if row["sequence"] is not None)
        return RecordPage(records, first["stream_head"], first["stream_earliest"],
                          first["stream_closed"])

    async def newest_appended_before(self, key: StreamKey, cutoff: datetime) -> int:
        return int(await self._pool.fetchval(_NEWEST_BEFORE, stream_id(key), cutoff))
