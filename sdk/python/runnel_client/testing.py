"""An in-memory stand-in for the async client, so producer code can be tested without a server.

It keeps Runnel's promises that producer code relies on: dense sequences,
idempotency keys that return the original sequence, closed streams refusing
appends, exclusive cursors, acks that only advance, `best_effort` streams that
store nothing (appends go to live followers, answered `{"accepted": n}`), live
chunks reaching only the followers with `live=True` that are following when they
are published. It does not model credit, retention, auth or placement.
"""

from __future__ import annotations

import asyncio
import base64
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from runnel_client.errors import RunnelError
from runnel_client.layers import Steps
from runnel_client.wire import LiveEvent, Record

MAX_BATCH = 1000


@dataclass
class _Stream:
    definition: dict[str, Any]
    records: list[Record] = field(default_factory=list)
    receipts: dict[str, int] = field(default_factory=dict)
    acks: dict[str, int] = field(default_factory=dict)
    live: list[dict[str, Any]] = field(default_factory=list)
    closed: bool = False
    changed: asyncio.Event = field(default_factory=asyncio.Event)

    @property
    def best_effort(self) -> bool:
        return self.definition.get("mode") == "best_effort"

    def notify(self) -> None:
        """Wake every follower: each waits on the event it saw before looking, so none
        misses a change made while it was busy."""
        changed, self.changed = self.changed, asyncio.Event()
        changed.set()

    def publish(self, chunks: list[Any], source: str | None, attempt: int | None,
                first_index: int) -> None:
        self.live.extend({"seq": len(self.live) + 1 + offset, "data": chunk, "source": source,
                          "attempt": attempt, "index": first_index + offset}
                         for offset, chunk in enumerate(chunks))
        self.notify()


def _refuse(status: int, code: str, detail: str) -> RunnelError:
    return RunnelError(status, code, {"code": code, "detail": detail, "status": status})


class InMemoryRunnel:
    def __init__(self) -> None:
        self._streams: dict[tuple[str, str], _Stream] = {}

    def _stream(self, run_id: str, stream_id: str) -> _Stream:
        stream = self._streams.get((run_id, stream_id))
        if stream is None:
            raise _refuse(404, "not_found", "stream not found")
        return stream

    def records(self, run_id: str, stream_id: str) -> list[Record]:
        """Everything appended so far: what a test asserts on."""
        return list(self._stream(run_id, stream_id).records)

    def live_chunks(self, run_id: str, stream_id: str) -> list[dict[str, Any]]:
        return list(self._stream(run_id, stream_id).live)

    async def create_stream(self, run_id: str, definition: dict[str, Any]) -> dict[str, Any]:
        key = (run_id, definition["stream_id"])
        existing = self._streams.get(key)
        if existing is not None and existing.definition != definition:
            raise _refuse(409, "definition_conflict", "different definition")
        self._streams.setdefault(key, _Stream(dict(definition)))
        return {"run_id": run_id, "stream_id": definition["stream_id"]}

    async def append(self, run_id: str, stream_id: str,
                     records: list[dict[str, Any]]) -> dict[str, Any]:
        stream = self._stream(run_id, stream_id)
        if stream.closed:
            raise _refuse(409, "stream_closed", "stream is closed")
        if not 0 < len(records) <= MAX_BATCH:
            raise _refuse(422, "invalid_record", f"records must be 1-{MAX_BATCH} items")
        for item in records:
            if ("payload" in item) == ("data" in item):
                raise _refuse(422, "invalid_record", "a record has a payload or data")
        if stream.best_effort:
            stream.publish([item["payload"] if "payload" in item else {
                "content_type": item.get("content_type") or "application/octet-stream",
                "data": item["data"]} for item in records], None, None, 0)
            return {"accepted": len(records)}
        sequences = []
        for item in records:
            key = item.get("idempotency_key")
            if key is not None and key in stream.receipts:
                sequences.append(stream.receipts[key])
                continue
            sequence = len(stream.records) + 1
            if "data" in item:
                base64.b64decode(item["data"], validate=True)
            stream.records.append(Record(
                sequence=sequence,
                content_type=item.get("content_type") or (
                    "application/json" if "payload" in item else "application/octet-stream"),
                appended_at=datetime.now(UTC).isoformat(), payload=item.get("payload"),
                data=item.get("data"), idempotency_key=key))
            if key is not None:
                stream.receipts[key] = sequence
            sequences.append(sequence)
        stream.notify()
        return {"sequences": sequences, "head": len(stream.records)}

    async def read(self, run_id: str, stream_id: str, after: int = 0,
                   limit: int = 100) -> dict[str, Any]:
        stream = self._stream(run_id, stream_id)
        if after > len(stream.records):
            raise _refuse(400, "future_cursor", "cursor beyond head")
        page = stream.records[after:after + limit]
        return {"records": [_envelope(record) for record in page],
                "next_cursor": page[-1].sequence if page else after,
                "head": len(stream.records), "earliest": 1, "closed": stream.closed}

    async def ack(self, run_id: str, stream_id: str, consumer_id: str,
                  sequence: int) -> dict[str, Any]:
        stream = self._stream(run_id, stream_id)
        if sequence > len(stream.records):
            raise _refuse(400, "ack_beyond_head", "ack beyond head")
        if sequence < stream.acks.get(consumer_id, 0):
            raise _refuse(409, "ack_regression", "ack below current")
        stream.acks[consumer_id] = sequence
        return {"consumer_id": consumer_id, "acked": sequence}

    async def close_stream(self, run_id: str, stream_id: str) -> dict[str, Any]:
        stream = self._stream(run_id, stream_id)
        stream.closed = True
        stream.notify()
        return {"closed": True, "head": len(stream.records)}

    async def publish_live(self, run_id: str, stream_id: str, chunks: list[Any],
                           source: str | None = None, attempt: int | None = None,
                           index: int | None = None) -> dict[str, Any]:
        stream = self._stream(run_id, stream_id)
        if not 0 < len(chunks) <= MAX_BATCH:
            raise _refuse(422, "invalid_record", f"chunks must be 1-{MAX_BATCH} items")
        stream.publish(list(chunks), source, attempt, index or 0)
        return {"accepted": len(chunks)}

    async def get_stream(self, run_id: str, stream_id: str) -> dict[str, Any]:
        stream = self._stream(run_id, stream_id)
        return {**stream.definition, "run_id": run_id,
                "status": {"head": len(stream.records), "closed": stream.closed}}

    async def follow(self, run_id: str, stream_id: str, after: int = 0, *,
                     live: bool = False, **_: Any) -> AsyncIterator[Record | LiveEvent]:
        """Every record above `after`, then waits for more; ends once the stream is closed.
        With `live=True` (always for a `best_effort` stream) also the chunks published
        while following, under the same two-layer rules as the real client's (no chunk
        of a step whose record arrived, none of an older attempt; `runnel_client.layers`)."""
        stream = self._stream(run_id, stream_id)
        if after > len(stream.records):
            raise _refuse(400, "future_cursor", "cursor beyond head")
        cursor = after
        seen_live = len(stream.live)
        live = live or stream.best_effort
        steps = Steps()
        while True:
            changed = stream.changed
            while cursor < len(stream.records):
                cursor += 1
                steps.settle(stream.records[cursor - 1])
                yield stream.records[cursor - 1]
            while live and seen_live < len(stream.live):
                seen_live += 1
                event = steps.admit(stream.live[seen_live - 1])
                if event is not None:
                    yield event
            if stream.closed and cursor == len(stream.records):
                return
            if cursor == len(stream.records) and not (live and seen_live < len(stream.live)):
                await changed.wait()


def _envelope(record: Record) -> dict[str, Any]:
    """A record as the server's read page carries it."""
    body: dict[str, Any] = {"sequence": record.sequence, "content_type": record.content_type,
                            "appended_at": record.appended_at}
    if record.data is not None:
        body["data"] = record.data
    else:
        body["payload"] = record.payload
    if record.idempotency_key is not None:
        body["idempotency_key"] = record.idempotency_key
    return body
