"""Which `WorkflowWaitService` a node publishes input events through, opened with the node.

- `RUNNEL_WAIT_SERVICE=webhook`: POST to `RUNNEL_WEBHOOK_URL`, signed with
  `RUNNEL_WEBHOOK_SECRET` (ADR 0022), one HTTP connection pool for the node's lifetime;
  an event is delivered once the receiver answers 2xx;
- `dbos`: a DBOS `send` to the run's workflow through the DBOS system database at
  `RUNNEL_DBOS_DATABASE_URL` (ADR 0043); delivered once the message has committed there;
- `notify`: a Postgres NOTIFY on `RUNNEL_NOTIFY_CHANNEL` through the backend's pool;
  an event is only published: Postgres gives it to the sessions listening at commit;
- `none` (the default with Postgres storage): no wait service, so nothing is
  claimed and input records stay pending in the outbox until one is configured;
- `memory` (the default with `RUNNEL_STORAGE=memory`): kept in this process.

`Settings` has already refused the combinations that cannot work (ADR 0014).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from adapters.backend import Backend
from adapters.memory.workflow import MemoryWorkflowWaitService
from adapters.webhook import WebhookWaitService
from application.ports.outboxes import WorkflowWaitService
from entrypoints.composition.settings import Settings


@asynccontextmanager
async def open_wait_service(settings: Settings,
                            backend: Backend) -> AsyncIterator[WorkflowWaitService | None]:
    kind = settings.wait_service_kind()
    if kind == "webhook":
        assert settings.webhook_url is not None  # checked by Settings
        assert settings.webhook_secret is not None  # checked by Settings
        async with WebhookWaitService(settings.webhook_url,
                                      settings.webhook_secret.get_secret_value()) as webhook:
            yield webhook
        return
    if kind == "dbos":
        from adapters.dbos import DbosWaitService  # needs the optional `dbos` extra

        assert settings.dbos_database_url is not None  # checked by Settings
        async with DbosWaitService(settings.dbos_database_url.get_secret_value()) as dbos:
            yield dbos
        return
    if kind == "notify":
        if backend.notify is None:
            raise ValueError("RUNNEL_WAIT_SERVICE=notify needs RUNNEL_STORAGE=postgres")
        yield backend.notify(settings.notify_channel)
        return
    yield MemoryWorkflowWaitService() if kind == "memory" else None

