"""The storage contract: what every storage adapter's StreamStore (and its units of work),
RecordReader, WakeBus, GapEvidence, DeliveryOutbox and DeletionOutbox must do, written
once, one class per port.

An adapter's test module subclasses `StorageContract` (every port at once) and provides
an async fixture `harness` returning a `StorageHarness`. Every test uses its own tenant
and run, so adapters backed by a shared database need not be emptied between tests.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from tests.contracts.deletion_outbox_contract import DeletionOutboxContract
from tests.contracts.delivery_outbox_contract import DeliveryOutboxContract
from tests.contracts.gap_evidence_contract import GapEvidenceContract
from tests.contracts.harness import StorageHarness
from tests.contracts.record_reader_contract import RecordReaderContract
from tests.contracts.storage_support import (
    HERE,
    LEASE,
    NOW,
    append,
    created,
    new_intent,
    our_bodies,
    ours,
)
from tests.contracts.stream_session_contract import StreamSessionContract
from tests.contracts.stream_store_contract import StreamStoreContract
from tests.contracts.wake_bus_contract import WakeBusContract


class StorageContract(StreamStoreContract, StreamSessionContract, RecordReaderContract,
                      WakeBusContract, GapEvidenceContract, DeliveryOutboxContract,
                      DeletionOutboxContract):
    """Every port, and what the workers of a region see across them."""

    async def test_workers_see_only_the_streams_homed_in_their_region(
            self, harness: StorageHarness) -> None:
        far = {"metadata_home": "far", "object_regions": ["far"],
               "client_egress_regions": ["far"], "log_region": "far"}
        key = await created(harness, direction="input", placement=far,
                            retention={"max_records": 1})
        await append(harness, key, [{"payload": 1}], deliveries=True)
        cutoff = datetime(1981, 1, 1, tzinfo=UTC)
        async with harness.store.lock(key) as session:
            session.save_intent(new_intent(key, "o", expires_at=cutoff - timedelta(seconds=1)))
            session.queue_deletions([("far", f"{key.tenant}/far-body")], NOW)
        for home, found in ((HERE, False), ("far", True)):
            retained = await harness.store.streams_with_retention(None, 10_000, home)
            assert (key in retained) is found
            expired = await harness.store.expired_intents(cutoff, 10_000, home)
            assert any(stream == key for stream, _ in expired) is found
            assert bool(ours(await harness.outbox.claim("w", NOW, LEASE, 1000, home), key)) \
                is found
            assert bool(our_bodies(await harness.deletions.claim("w", NOW, LEASE, 1000, home),
                                   key)) is found
