"""The NOTIFY `WorkflowWaitService`: each input event becomes one `pg_notify` on a channel.

Rules:
- the payload is the event as JSON (`event_id`, `tenant`, `run_id`, `stream_id`,
  `sequence`, `record`); when it would exceed what NOTIFY carries
  (8000 bytes) the `record` is left out and `record_omitted` is true (the
  listener reads the record by tenant, run, stream and sequence);
- `publish` returning means published, never delivered: the NOTIFY committed
  (it completes the outbox row and counts on `runnel_input_events_published`).
  Postgres gives it only to sessions LISTENing at that moment, and tells nobody
  when there are none. So this adapter suits a workflow engine that listens
  continuously, deduplicates by `event_id`, and after every (re)connect
  reconciles by reading the input stream past its last handled sequence
  (ADR 0014);
- a NOTIFY is not signed: any session of the database may notify any channel. A
  listener that does not trust every database user takes a notification as a
  doorbell and reads the record from Runnel (ADR 0022).
"""

from __future__ import annotations

from typing import Any

import asyncpg

from application.ports.outboxes import InputEvent
from domain.canonical_json import compact_text

MAX_PAYLOAD_BYTES = 7900
"""Below Postgres's 8000-byte NOTIFY limit, with room to spare."""
DEFAULT_CHANNEL = "runnel_input_events"


def notify_payload(event: InputEvent) -> str:
    body: dict[str, Any] = {"event_id": event.event_id, "tenant": event.tenant,
                            "run_id": event.run_id,
                            "stream_id": event.stream_id, "sequence": event.sequence,
                            "record": dict(event.record)}
    text = compact_text(body)
    if len(text.encode()) <= MAX_PAYLOAD_BYTES:
        return text
    del body["record"]
    body["record_omitted"] = True
    return compact_text(body)


class PostgresNotifyWaitService:
    """Implements `WorkflowWaitService` on the adapters' pool."""

    def __init__(self, pool: asyncpg.Pool, channel: str = DEFAULT_CHANNEL) -> None:
        self._pool = pool
        self._channel = channel

    async def publish(self, event: InputEvent) -> None:
        await self._pool.execute("SELECT pg_notify($1, $2)", self._channel,
                                 notify_payload(event))
