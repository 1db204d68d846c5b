"""What a storage adapter hands the contract tests: its backend, the adapters' bundle
(`adapters.backend.Backend`), as the node's container opens it for the settings given, so
the contracts hold what a node runs on. Each backend's gap evidence reads back what it
recorded with `gaps.recorded(key)`."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from adapters.backend import Backend
from entrypoints.composition.container import NodeContainer, open_node
from entrypoints.composition.settings import Settings

StorageHarness = Backend


def memory_harness() -> StorageHarness:
    """A fresh in-memory backend, the one `RUNNEL_STORAGE=memory` selects (nothing to open)."""
    backend: Backend = NodeContainer(settings=Settings(
        storage="memory", object_store="memory", wait_service="memory", workers=False)
    ).backend()
    return backend


@asynccontextmanager
async def postgres_harness(dsn: str) -> AsyncIterator[StorageHarness]:
    """The Postgres backend of a node on `dsn` (already migrated), open while in use."""
    settings = Settings(storage="postgres", database_url=dsn, auto_migrate=False,
                        object_store="memory", wait_service="none", workers=False)
    async with open_node(NodeContainer(settings=settings)) as node:
        yield node.backend
