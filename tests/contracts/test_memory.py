"""The in-memory adapters pass the port contracts."""

import pytest

from adapters.memory.bus import MemoryWakeBus
from adapters.memory.objects import MemoryObjectStore
from adapters.memory.outboxes import MemoryDeliveryOutbox
from adapters.memory.revoked_tokens import MemoryRevokedTokens
from adapters.memory.store import MemoryStreamStore
from adapters.memory.subscription_leases import MemorySubscriptionLeases
from adapters.memory.upkeep import MemoryStorageUpkeep
from domain.identifiers import StreamKey
from tests.contracts.harness import StorageHarness
from tests.contracts.object_store_contract import ObjectStoreContract
from tests.contracts.revoked_tokens_contract import RevokedTokensContract
from tests.contracts.storage_contract import StorageContract
from tests.contracts.subscription_lease_contract import SubscriptionLeaseContract
from tests.contracts.upkeep_contract import UpkeepContract, UpkeepHarness


class TestMemoryStorage(StorageContract):
    @pytest.fixture
    async def harness(self) -> StorageHarness:
        bus = MemoryWakeBus()
        outbox = MemoryDeliveryOutbox()
        store = MemoryStreamStore(bus, outbox)

        async def gap_reader(key: StreamKey) -> list[tuple[int, int]]:
            return [(expected, received) for gap_key, expected, received in store.gaps
                    if gap_key == key]

        return StorageHarness(store=store, reader=store, gaps=store, bus=bus, outbox=outbox,
                              gap_reader=gap_reader, deletions=store.deletions)


class TestMemoryObjects(ObjectStoreContract):
    @pytest.fixture
    def object_store(self) -> MemoryObjectStore:
        return MemoryObjectStore(("local",))


class TestMemorySubscriptionLeases(SubscriptionLeaseContract):
    """One process is the whole memory service: its "other node" is the same adapter."""

    @pytest.fixture
    def leases(self) -> MemorySubscriptionLeases:
        return MemorySubscriptionLeases()

    @pytest.fixture
    def other_node(self, leases: MemorySubscriptionLeases) -> MemorySubscriptionLeases:
        return leases


class TestMemoryRevokedTokens(RevokedTokensContract):
    """One process is the whole memory service: its "other node" is the same adapter."""

    @pytest.fixture
    def revoked(self) -> MemoryRevokedTokens:
        return MemoryRevokedTokens()

    @pytest.fixture
    def other_node(self, revoked: MemoryRevokedTokens) -> MemoryRevokedTokens:
        return revoked

    async def wait_for_ring(self, rings: list[None]) -> None:
        assert rings  # rung synchronously by the revocation itself


class TestMemoryUpkeep(UpkeepContract):
    @pytest.fixture
    async def upkeep(self) -> UpkeepHarness:
        bus = MemoryWakeBus()
        outbox = MemoryDeliveryOutbox()
        store = MemoryStreamStore(bus, outbox)

        async def gap_reader(key: StreamKey) -> list[tuple[int, int]]:
            return [(expected, received) for gap_key, expected, received in store.gaps
                    if gap_key == key]

        async def events(key: StreamKey) -> int:
            return len(store.event_log(key))

        async def delivery_rows(key: StreamKey) -> int:
            return outbox.rows_of(key)

        storage = StorageHarness(store=store, reader=store, gaps=store, bus=bus, outbox=outbox,
                                 gap_reader=gap_reader, deletions=store.deletions)
        return UpkeepHarness(storage, MemoryStorageUpkeep(store, outbox), events,
                             delivery_rows)
