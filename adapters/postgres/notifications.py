r"""NOTIFY payloads for wakes and live chunks, and their decoding.

A payload is `<origin>\n<stream channel key>\n<compact JSON>`. The origin names
the sending process: a process delivers its own commits and chunks to its
local readers directly, so its listener skips payloads of its own origin. The
listener reads the key before the JSON and parses the JSON only when a local
reader follows that stream.

Postgres refuses payloads of 8000 bytes or more, so:
- a wake carries its records only when the whole payload stays under the limit
  (otherwise it goes without them and readers re-read from their cursor);
- a live chunk that does not fit is dropped (the use case already caps chunks
  at 7000 bytes, so only a pathological envelope gets here; the reader sees the
  gap in `seq`).
"""

from __future__ import annotations

import base64
import json
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from application.ports import LiveChunk, StoredRecord, Wake
from domain.canonical_json import compact_text
from domain.identifiers import StreamKey
from domain.records import ObjectRef

WAKE_CHANNEL = "runnel_wake"
LIVE_CHANNEL = "runnel_live"
PAYLOAD_LIMIT_BYTES = 7999


def _record_json(record: StoredRecord, payload_text: str | None) -> str:
    """One record as JSON text; `payload_text` is the payload already encoded (the
    store encodes it once for its own row and reuses it here)."""
    parts = ['{"s":', str(record.sequence), ',"t":', _json_text(record.content_type), ',"a":"',
             _iso(record.appended_at), '","z":', str(record.size)]
    if record.has_payload:
        parts += [',"p":', payload_text if payload_text is not None
                  else compact_text(record.payload)]
    if record.data is not None:
        parts += [',"d":"', base64.b64encode(record.data).decode("ascii"), '"']
    if record.object is not None:
        ref = record.object
        parts += [',"o":', compact_text([ref.object_id, ref.size, ref.sha256, ref.content_type])]
    if record.idempotency_key is not None:
        parts += [',"k":', compact_text(record.idempotency_key)]
    parts.append("}")
    return "".join(parts)


_texts: dict[str, str] = {}


def _json_text(text: str) -> str:
    # Content types repeat endlessly: encode each once.
    encoded = _texts.get(text)
    if encoded is None:
        if len(_texts) > 1024:
            _texts.clear()
        encoded = _texts[text] = compact_text(text)
    return encoded


_last_iso: tuple[datetime, str] | None = None


def _iso(moment: datetime) -> str:
    # The records of one append share one timestamp: format it once.
    global _last_iso
    if _last_iso is None or _last_iso[0] is not moment:
        _last_iso = (moment, moment.isoformat())
    return _last_iso[1]


def _record_from_json(encoded: dict[str, Any]) -> StoredRecord:
    ref = encoded.get("o")
    data = encoded.get("d")
    return StoredRecord(
        sequence=encoded["s"], content_type=encoded["t"],
        appended_at=datetime.fromisoformat(encoded["a"]), size=encoded["z"],
        payload=encoded.get("p"), has_payload="p" in encoded,
        data=base64.b64decode(data) if data is not None else None,
        object=ObjectRef(ref[0], ref[1], ref[2], ref[3]) if ref is not None else None,
        idempotency_key=encoded.get("k"),
    )


def _fits(payload: str) -> bool:
    # Fast path: a str never encodes to fewer bytes than characters, nor more than 4x.
    if len(payload) * 4 <= PAYLOAD_LIMIT_BYTES:
        return True
    return len(payload) <= PAYLOAD_LIMIT_BYTES and len(payload.encode()) <= PAYLOAD_LIMIT_BYTES


def encode_wake(wake: Wake, origin: str,
                payload_texts: Mapping[int, str | None] | None = None) -> str:
    """Always returns a payload that fits: without records when they would not."""
    prefix = origin + "\n" + wake.stream.channel_key + "\n"
    status = '{"h":' + str(wake.head) + ',"c":' + ("true" if wake.closed else "false")
    if wake.records is not None:
        texts = payload_texts or {}
        records = ",".join(_record_json(record, texts.get(record.sequence))
                           for record in wake.records)
        with_records = prefix + status + ',"r":[' + records + "]}"
        if _fits(with_records):
            return with_records
    return prefix + status + "}"


def encode_live(chunk: LiveChunk, origin: str) -> str | None:
    """None when the chunk cannot ride a NOTIFY."""
    body: dict[str, Any] = {"q": chunk.seq, "d": chunk.data}
    if chunk.source is not None:
        body["s"] = chunk.source
    if chunk.attempt is not None:
        body["a"] = chunk.attempt
    if chunk.index is not None:
        body["i"] = chunk.index
    try:
        payload = origin + "\n" + chunk.stream.channel_key + "\n" + compact_text(body)
    except (TypeError, ValueError):
        return None
    return payload if _fits(payload) else None


def split_payload(payload: str) -> tuple[str, str, str]:
    """(origin, channel key, JSON body)."""
    origin, _, rest = payload.partition("\n")
    key, _, body = rest.partition("\n")
    return origin, key, body


def decode_wake(key: StreamKey, body: str) -> Wake:
    decoded = json.loads(body)
    records = decoded.get("r")
    return Wake(key, decoded["h"], decoded["c"],
                tuple(_record_from_json(r) for r in records) if records is not None else None)


def decode_live(key: StreamKey, body: str) -> LiveChunk:
    decoded = json.loads(body)
    return LiveChunk(key, decoded["q"], decoded["d"], decoded.get("s"), decoded.get("a"),
                     decoded.get("i"))
