"""The DBOS `WorkflowWaitService`: one DBOS `send` per input event (ADR 0043).

Rules:
- the destination is the run's workflow, `workflow_id_for(tenant, run_id)`
  (`runnel_client/dbos_ids.py`, the one home of the mapping, which workflow code uses too);
  the topic is the stream id, so a workflow reads each input stream with `recv(stream_id)`;
- the idempotency key is the event id, stable across retries, processes and nodes: DBOS
  keeps one message per key and destination, so a redelivery after a crash (the send
  committed, the outbox row did not) is received once;
- the message is the event as the webhook sends it (`event_id`, `tenant`, `run_id`,
  `stream_id`, `sequence`, `record`), as plain JSON values;
- `publish` returns once the message has committed in the DBOS system database: that is
  delivered, since `recv` reads it from there whenever the workflow runs; a destination
  that does not exist yet, or a database error, raises, so the dispatcher retries the row
  with backoff and dead-letters it after the pinned attempts;
- the DBOS client is synchronous (SQLAlchemy): each send runs on a worker thread, never on
  the event loop.
"""

from __future__ import annotations

from types import TracebackType
from typing import Any

from runnel_client.dbos_ids import workflow_id_for

from adapters.webhook.wait_service import event_body
from application.ports.outboxes import InputEvent


class DbosWaitService:
    """Implements `WorkflowWaitService`; holds one DBOS client until `aclose()`."""

    def __init__(self, system_database_url: str, client: Any | None = None) -> None:
        if client is None:
            from dbos import DBOSClient  # the optional `dbos` extra, only when configured

            client = DBOSClient(system_database_url=system_database_url, lazy=True)
        self._client = client

    async def publish(self, event: InputEvent) -> None:
        await self._client.send_async(workflow_id_for(event.tenant, event.run_id),
                                      event_body(event), topic=event.stream_id,
                                      idempotency_key=event.event_id)

    async def aclose(self) -> None:
        self._client.destroy()

    async def __aenter__(self) -> DbosWaitService:
        return self

    async def __aexit__(self, kind: type[BaseException] | None, error: BaseException | None,
                        trace: TracebackType | None) -> None:
        await self.aclose()
