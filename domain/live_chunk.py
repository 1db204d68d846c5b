"""Best-effort live chunks: redaction, the size cap and its truncation marker (their
`seq` is `domain.live_seq`)."""

from __future__ import annotations

from typing import Any

from domain.canonical_json import compact_json
from domain.redaction import redact

LIVE_CHUNK_MAX_BYTES = 7000


def cap_chunk(chunk: Any) -> Any:
    """A chunk over 7000 serialized bytes is replaced by a marker, never silently dropped."""
    size = len(compact_json(chunk))
    if size > LIVE_CHUNK_MAX_BYTES:
        return {"_truncated": True, "bytes": size}
    return chunk


def outgoing_chunk(chunk: Any, mask: tuple[str, ...]) -> Any:
    """What a live chunk carries out of the producer: its stream's redaction first (a chunk
    rides NOTIFY, reaches readers and is stored nowhere, so nothing later could mask it),
    then the size cap, measured on what is actually sent."""
    return cap_chunk(redact(chunk, mask))
