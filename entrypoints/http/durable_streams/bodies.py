"""A request body as Runnel records (ADR 0041)."""

from __future__ import annotations

import base64
import json
from typing import Any

from domain.media_type import is_media_type
from domain.records import INLINE_MAX_BYTES
from entrypoints.http.durable_streams import wire
from entrypoints.http.inputs import check_record_depth


def to_records(content_type: str, body: bytes, allow_empty_array: bool) -> list[dict[str, Any]]:
    """Runnel records of one request body, one per append where it fits inline. JSON mode
    flattens one array level into messages and stores them as one array payload (a
    batch too large for one record is cut between messages); any other type is bytes,
    cut into inline-sized records. A read joins them again."""
    if not body:
        return []
    if not wire.is_json(content_type):
        # Stored with the stream's content type, so a masked stream masks JSON bytes
        # (`+json`) and refuses the rest, as it does for a native `data` record.
        typed = {"content_type": content_type} if is_media_type(content_type) else {}
        return [{"data": base64.b64encode(body[start:start + INLINE_MAX_BYTES]).decode(),
                 **typed} for start in range(0, len(body), INLINE_MAX_BYTES)]
    try:
        value = json.loads(body)
    except (ValueError, UnicodeDecodeError, RecursionError):
        raise wire.BadRequest("the body is not valid JSON") from None
    messages = value if isinstance(value, list) else [value]
    if not messages:
        if not allow_empty_array:
            raise wire.BadRequest("an empty JSON array appends nothing")
        return []
    batches: list[list[Any]] = [[]]
    size = 2
    for message in messages:
        weight = len(json.dumps(message, separators=(",", ":"), ensure_ascii=False).encode()) + 1
        if batches[-1] and size + weight > INLINE_MAX_BYTES:
            batches.append([])
            size = 2
        batches[-1].append(message)
        size += weight
    records = [{"payload": batch} for batch in batches]
    check_record_depth(records)  # the native rule: iterative, so no recursion limit is hit
    return records
