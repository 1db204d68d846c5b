"""The in-memory adapters pass the port contracts."""

import pytest

from adapters.memory.objects import MemoryObjectStore
from adapters.memory.outboxes import MemoryDeliveryOutbox
from adapters.memory.store import MemoryStreamStore
from application.ports.access import RevokedTokens, SubscriptionLeases
from domain.identifiers import StreamKey
from tests.contracts.harness import StorageHarness, memory_harness
from tests.contracts.object_store_contract import ObjectStoreContract
from tests.contracts.revoked_tokens_contract import RevokedTokensContract
from tests.contracts.storage_contract import StorageContract
from tests.contracts.subscription_lease_contract import SubscriptionLeaseContract
from tests.contracts.upkeep_contract import UpkeepContract, UpkeepHarness


class TestMemoryStorage(StorageContract):
    @pytest.fixture
    async def harness(self) -> StorageHarness:
        return memory_harness()


class TestMemoryObjects(ObjectStoreContract):
    @pytest.fixture
    def object_store(self) -> MemoryObjectStore:
        return MemoryObjectStore(("local",))


class TestMemorySubscriptionLeases(SubscriptionLeaseContract):
    """One process is the whole memory service: its "other node" is the same adapter."""

    @pytest.fixture
    def leases(self) -> SubscriptionLeases:
        return memory_harness().leases

    @pytest.fixture
    def other_node(self, leases: SubscriptionLeases) -> SubscriptionLeases:
        return leases


class TestMemoryRevokedTokens(RevokedTokensContract):
    """One process is the whole memory service: its "other node" is the same adapter."""

    @pytest.fixture
    def revoked(self) -> RevokedTokens:
        return memory_harness().revoked

    @pytest.fixture
    def other_node(self, revoked: RevokedTokens) -> RevokedTokens:
        return revoked

    async def wait_for_ring(self, rings: list[None]) -> None:
        assert rings  # rung synchronously by the revocation itself


class TestMemoryUpkeep(UpkeepContract):
    @pytest.fixture
    async def upkeep(self) -> UpkeepHarness:
        backend = memory_harness()
        store, outbox, upkeep = backend.store, backend.outbox, backend.upkeep
        assert isinstance(store, MemoryStreamStore) and upkeep is not None
        assert isinstance(outbox, MemoryDeliveryOutbox)

        async def events(key: StreamKey) -> int:
            return len(store.event_log(key))

        async def delivery_rows(key: StreamKey) -> int:
            return outbox.rows_of(key)

        return UpkeepHarness(backend, upkeep, events, delivery_rows)
