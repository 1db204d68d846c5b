"""The `GapEvidence` contract: gaps are recorded per stream.
"""

from __future__ import annotations

from domain.identifiers import StreamKey
from tests.contracts.harness import StorageHarness
from tests.contracts.storage_support import (
    created,
)


class GapEvidenceContract:
    async def test_gaps_are_recorded_per_stream(self, harness: StorageHarness) -> None:
        key = await created(harness)
        other = await created(harness, StreamKey(key.tenant, key.run_id, "other"))
        await harness.gaps.record_gap(key, 3, 7)
        await harness.gaps.record_gap(key, 9, 10)
        assert await harness.gaps.recorded(key) == [(3, 7), (9, 10)]
        assert await harness.gaps.recorded(other) == []
