"""Best-effort live chunks: redaction, the size cap and its truncation marker (their
`seq` is `domain.live_seq`).

Rules:

- A chunk is a JSON value, masked as a payload is (`masking.enforce`).
- On a masked stream, a chunk with `content_type` and `data` members is also a byte body
  (the shape in which a best-effort stream sends a `data` record): its `data` must be
  base64 and its `content_type` a media type, and its decoded body is masked or refused
  as a record's `data` is, before the chunk itself is masked.
- The size cap is measured on what is actually sent, after redaction.
"""

from __future__ import annotations

import base64
from typing import Any

from domain.canonical_json import compact_json
from domain.errors import InvalidRecord
from domain.masking import BytesBody, JsonBody, enforce
from domain.media_type import validate_media_type
from domain.records import decode_data

LIVE_CHUNK_MAX_BYTES = 7000


def cap_chunk(chunk: Any) -> Any:
    """A chunk over 7000 serialized bytes is replaced by a marker, never silently dropped."""
    size = len(compact_json(chunk))
    if size > LIVE_CHUNK_MAX_BYTES:
        return {"_truncated": True, "bytes": size}
    return chunk


def outgoing_chunk(chunk: Any, mask: tuple[str, ...], allow_unmasked_bodies: bool) -> Any:
    """What a live chunk carries out of the producer (a chunk rides NOTIFY, reaches readers
    and is stored nowhere, so nothing later could mask it)."""
    if mask and isinstance(chunk, dict) and "content_type" in chunk and "data" in chunk:
        chunk = {**chunk, "data": _masked_data(chunk, mask, allow_unmasked_bodies)}
    return cap_chunk(enforce(JsonBody(chunk), mask, allow_unmasked_bodies).value)


def _masked_data(chunk: dict[str, Any], mask: tuple[str, ...],
                 allow_unmasked_bodies: bool) -> str:
    content_type = validate_media_type(chunk["content_type"])
    if not isinstance(chunk["data"], str):
        raise InvalidRecord("a chunk with content_type and data carries data as base64",
                            field="data")
    body = enforce(BytesBody(decode_data(chunk["data"]), content_type), mask,
                   allow_unmasked_bodies)
    return base64.b64encode(body.data).decode()
