"""Which `WorkflowWaitService` a node publishes input events through, opened with the node.

- `RUNNEL_WAIT_SERVICE=webhook`: POST to `RUNNEL_WEBHOOK_URL` (required), one HTTP
  connection pool for the node's lifetime;
- `notify`: a Postgres NOTIFY on `RUNNEL_NOTIFY_CHANNEL` through the backend's pool
  (needs `RUNNEL_STORAGE=postgres`);
- `memory` (default): kept in this process; for tests and local trials only.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from adapters.memory.workflow import MemoryWorkflowWaitService
from adapters.webhook import WebhookWaitService
from application.ports import WorkflowWaitService
from entrypoints.backend import Backend
from entrypoints.settings import Settings


@asynccontextmanager
async def open_wait_service(settings: Settings,
                            backend: Backend) -> AsyncIterator[WorkflowWaitService]:
    if settings.wait_service == "webhook":
        if not settings.webhook_url:
            raise ValueError("RUNNEL_WAIT_SERVICE=webhook needs RUNNEL_WEBHOOK_URL")
        async with WebhookWaitService(settings.webhook_url) as webhook:
            yield webhook
        return
    if settings.wait_service == "notify":
        if backend.notify is None:
            raise ValueError("RUNNEL_WAIT_SERVICE=notify needs RUNNEL_STORAGE=postgres")
        yield backend.notify(settings.notify_channel)
        return
    yield MemoryWorkflowWaitService()
