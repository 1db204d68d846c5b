"""How a producer names and groups its records before it sends them.

Rules:
- Keys: the n-th record a producer writes (from `start`, default 0) gets the
  idempotency key `<prefix>:<n>`. A producer restarted with the same prefix that
  writes the same records again stores none of them twice (the server answers a
  used key with the original sequence and stores nothing): the prefix names the
  work (`job-42/answer`), so new work needs a new prefix. A record that carries
  its own `idempotency_key` keeps it and takes no number.
- Sizes, the server's (docs/api.md): an inline record is at most 64 KiB (a JSON
  payload as compact UTF-8 JSON, `data` as decoded bytes); a larger one is refused
  here, before it is queued, pointing to `upload_object`. A batch holds at most
  1000 records and `max_batch_bytes` of request body (the server's append body
  ceiling is 8 MiB by default). On a stream with declared consumers a batch also
  stays within the unread ceilings, since a batch above them could never be
  accepted (413).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from runnel_client.errors import RunnelError

INLINE_MAX_BYTES = 64 * 1024
MAX_BATCH_RECORDS = 1000
DEFAULT_BATCH_BYTES = 4 * 1024 * 1024
MAX_KEY_LENGTH = 200


def compact(value: Any) -> bytes:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode()


def inline_size(record: dict[str, Any]) -> int:
    if "payload" in record:
        return len(compact(record["payload"]))
    data = record.get("data")
    if isinstance(data, str):
        return len(data) * 3 // 4 - data[-2:].count("=")
    return 0


def check_inline(record: dict[str, Any]) -> None:
    """Refuse, as the server would (413 `too_large`), a record above 64 KiB."""
    size = inline_size(record)
    if size > INLINE_MAX_BYTES:
        raise RunnelError(413, "too_large", {
            "code": "too_large", "limit": INLINE_MAX_BYTES, "size": size,
            "detail": f"inline record of {size} bytes exceeds {INLINE_MAX_BYTES} bytes: "
                      "send it as an object (upload_object)"})


@dataclass(frozen=True)
class BatchLimits:
    max_records: int = MAX_BATCH_RECORDS
    max_bytes: int = DEFAULT_BATCH_BYTES

    @classmethod
    def for_stream(cls, definition: dict[str, Any],
                   max_batch_bytes: int = DEFAULT_BATCH_BYTES) -> BatchLimits:
        """The limits for a stream, from its definition (`GET` on the stream)."""
        records, size = MAX_BATCH_RECORDS, max_batch_bytes
        credit = definition.get("credit") or {}
        if definition.get("consumers"):
            records = min(records, int(credit.get("max_unread_items", records)))
            size = min(size, int(credit.get("max_unread_bytes", size)))
        return cls(max(1, records), max(1, size))


class KeyCounter:
    """`<prefix>:<n>` keys, n counting up from `start`."""

    def __init__(self, prefix: str, start: int = 0) -> None:
        if not prefix or len(prefix) + 21 > MAX_KEY_LENGTH:
            raise ValueError(f"key_prefix must be 1-{MAX_KEY_LENGTH - 21} characters")
        if start < 0:
            raise ValueError("start must be ≥ 0")
        self.prefix = prefix
        self.next = start

    def take(self) -> str:
        key = f"{self.prefix}:{self.next}"
        self.next += 1
        return key


class Batch:
    """Records waiting to be sent, split where the limits say."""

    def __init__(self, limits: BatchLimits) -> None:
        self.limits = limits
        self.records: list[dict[str, Any]] = []
        self.bytes = len(b'{"records":[]}')
        self.sealed = False
        """Being sent (or sent): it takes no more records."""

    def fits(self, record: dict[str, Any]) -> bool:
        if self.sealed:
            return False
        size = len(compact(record)) + 1
        return not self.records or (len(self.records) < self.limits.max_records
                                    and self.bytes + size <= self.limits.max_bytes)

    def add(self, record: dict[str, Any]) -> None:
        self.records.append(record)
        self.bytes += len(compact(record)) + 1

    @property
    def full(self) -> bool:
        return len(self.records) >= self.limits.max_records
