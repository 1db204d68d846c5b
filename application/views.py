"""The wire shapes of streams and records (docs/api.md), shared by HTTP, SSE and delivery."""

from __future__ import annotations

import base64
from dataclasses import dataclass
from typing import Any

from application.ports.outboxes import Delivery, DeliveryRedrive
from application.ports.records import StoredRecord
from application.ports.streams import RunSummary
from domain.canonical_json import Verbatim, wire_json
from domain.stream import Stream

API_PREFIX = "/api/workflow-streams"


@dataclass(frozen=True)
class DeliveryCounts:
    """An input stream's outbox, as its status shows it (see `InputDispatcher`)."""

    pending: int = 0
    """Input records not yet handed to the workflow's wait service (waiting, retrying, or
    held until one is configured)."""
    dead_letters: int = 0
    """Input records whose delivery gave up."""


def stream_view(stream: Stream, deliveries: DeliveryCounts = DeliveryCounts()) -> dict[str, Any]:
    return {
        "run_id": stream.run_id,
        "stream_id": stream.stream_id,
        "definition": stream.definition.to_wire(),
        "status": {
            "head": stream.head,
            "earliest": stream.earliest,
            "closed": stream.closed,
            "legal_hold": stream.legal_hold,
            "erased": stream.erased,
            "consumers": dict(stream.acks),
            "pending_inputs": deliveries.pending,
            "dead_letters": deliveries.dead_letters,
            "unread": {"items": stream.usage.unread_items,
                       "bytes": stream.usage.unread_bytes},
        },
        "created_at": stream.created_at.isoformat(),
    }


def envelope_json(record: StoredRecord, run_id: str, stream_id: str) -> bytes:
    """The envelope as compact JSON, the payload's stored text spliced in unparsed: the
    `data` of an SSE record frame and an item of a records page (ADR 0048)."""
    return wire_json(record_envelope(record, run_id, stream_id, verbatim=True))


def record_envelope(record: StoredRecord, run_id: str, stream_id: str,
                    verbatim: bool = False) -> dict[str, Any]:
    """The envelope as a value, its payload parsed (for those that take values: delivery to
    a wait service), or with `verbatim` its payload's stored text, for `wire_json`."""
    envelope: dict[str, Any] = {
        "sequence": record.sequence,
        "content_type": record.content_type,
        "appended_at": record.appended_at.isoformat(),
    }
    if record.payload_json is not None:
        envelope["payload"] = Verbatim(record.payload_json) if verbatim else record.payload
    elif record.data is not None:
        envelope["data"] = base64.b64encode(record.data).decode()
    elif record.object is not None:
        ref = record.object
        envelope["object"] = {
            "object_id": ref.object_id,
            "size": ref.size,
            "sha256": ref.sha256,
            "content_type": ref.content_type,
            "href": f"{API_PREFIX}/runs/{run_id}/streams/{stream_id}/objects/{ref.object_id}/body",
        }
    if record.idempotency_key is not None:
        envelope["idempotency_key"] = record.idempotency_key
    return envelope


def run_view(run: RunSummary) -> dict[str, Any]:
    return {"run_id": run.run_id, "streams": run.streams,
            "created_at": run.created_at.isoformat()}


def dead_letter_view(delivery: Delivery) -> dict[str, Any]:
    return {"sequence": delivery.sequence, "attempts": delivery.attempts,
            "last_error": delivery.last_error}


def redrive_view(redrive: DeliveryRedrive) -> dict[str, Any]:
    return {"by": redrive.by, "at": redrive.at.isoformat(),
            "sequences": list(redrive.sequences)}
