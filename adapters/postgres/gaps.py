"""Gap evidence: wakes that revealed missing sequences, as reported by readers."""

from __future__ import annotations

import asyncpg

from adapters.postgres.ids import stream_id
from domain.identifiers import StreamKey

_RECORD = """
INSERT INTO gap_evidence (stream, tenant, run_id, stream_id, expected, received)
VALUES ($1, $2, $3, $4, $5, $6)
"""

_RECORDED = "SELECT expected, received FROM gap_evidence WHERE stream = $1 ORDER BY id"


class PostgresGapEvidence:
    """Implements `GapEvidence`; `recorded` reads it back (operators, tests)."""

    def __init__(self, pool: asyncpg.Pool) -> None:
        self._pool = pool

    async def record_gap(self, key: StreamKey, expected: int, received: int) -> None:
        await self._pool.execute(_RECORD, stream_id(key), key.tenant, key.run_id,
                                 key.stream_id, expected, received)

    async def recorded(self, key: StreamKey) -> list[tuple[int, int]]:
        """(expected, received) pairs for `key`, oldest first."""
        rows = await self._pool.fetch(_RECORDED, stream_id(key))
        return [(row["expected"], row["received"]) for row in rows]
