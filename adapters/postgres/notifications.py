r"""NOTIFY payloads for wakes and live chunks, and their decoding.

A payload is `<origin>\n<stream channel key>\n<compact JSON>`. The origin names
the sending process: a process delivers its own commits to its local readers
directly, so its listener skips wakes of its own origin. A wake that says closed
names no origin: every listener delivers it, its sender's too, so it reaches each
reader after the live chunks committed before it (ADR 0056). The listener reads the
key before the JSON and parses the JSON only when a local reader follows that stream.

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
from datetime import datetime
from operator import attrgetter
from typing import Any

import msgspec

from application.ports.records import StoredRecord
from application.ports.waking import LiveChunk, Wake
from domain.canonical_json import compact_text
from domain.identifiers import StreamKey
from domain.records import ObjectRef

WAKE_CHANNEL = "runnel_wake"
LIVE_CHANNEL = "runnel_live"
PAYLOAD_LIMIT_BYTES = 7999


def _record_json(record: StoredRecord) -> str:
    """One record as JSON text, its payload's stored text spliced in as it is."""
    parts = ['{"s":', str(record.sequence), ',"t":', _json_text(record.content_type), ',"a":"',
             _iso(record.appended_at), '","z":', str(record.size)]
    if record.payload_json is not None:
        parts += [',"p":', record.payload_json]
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


class _Record(msgspec.Struct, frozen=True):
    """A record in a wake, in its short keys. `p` is the payload's text, never parsed (an
    absent payload is the empty text, since JSON `null` is a payload)."""

    s: int
    t: str
    a: str
    z: int
    p: msgspec.Raw = msgspec.Raw()
    d: str | None = None
    o: tuple[str, int, str, str] | None = None
    k: str | None = None

    def stored(self) -> StoredRecord:
        ref = self.o
        return StoredRecord(
            sequence=self.s, content_type=self.t, appended_at=datetime.fromisoformat(self.a),
            size=self.z, payload_json=bytes(self.p).decode() if self.p else None,
            data=base64.b64decode(self.d) if self.d is not None else None,
            object=ObjectRef(*ref) if ref is not None else None, idempotency_key=self.k)


class _Wake(msgspec.Struct, frozen=True):
    h: int
    c: bool
    r: tuple[_Record, ...] | None = None


_decode_wake = msgspec.json.Decoder(_Wake).decode


def _fits(payload: str) -> bool:
    # Fast path: a str never encodes to fewer bytes than characters, nor more than 4x.
    if len(payload) * 4 <= PAYLOAD_LIMIT_BYTES:
        return True
    return len(payload) <= PAYLOAD_LIMIT_BYTES and len(payload.encode()) <= PAYLOAD_LIMIT_BYTES


_LEAST_RECORD_CHARS = len('{"s":0,"t":"","a":"0000-00-00T00:00:00","z":0}')
"""What every record's text holds besides its content type and payload (`_record_json`)."""
_CONTENT_TYPE = attrgetter("content_type")
_PAYLOAD = attrgetter("payload_json")


def _surely_too_long(records: tuple[StoredRecord, ...]) -> bool:
    """Whether the records' texts cannot fit a payload, by a count of characters that
    their texts hold at least (a text never has fewer UTF-8 bytes than characters)."""
    payloads = [text for text in map(_PAYLOAD, records) if text is not None]
    least = (len(records) * _LEAST_RECORD_CHARS + sum(map(len, map(_CONTENT_TYPE, records)))
             + len(',"p":') * len(payloads) + sum(map(len, payloads)))
    return least > PAYLOAD_LIMIT_BYTES


def encode_wake(wake: Wake, origin: str) -> str:
    """Always returns a payload that fits: without records when they would not."""
    prefix = ("" if wake.closed else origin) + "\n" + wake.stream.channel_key + "\n"
    status = '{"h":' + str(wake.head) + ',"c":' + ("true" if wake.closed else "false")
    if wake.records is not None and not _surely_too_long(wake.records):
        records = ",".join(map(_record_json, wake.records))
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
    """The payloads' texts are kept as they came (ADR 0048): a wake is decoded without
    parsing any payload."""
    decoded = _decode_wake(body)
    records = decoded.r
    return Wake(key, decoded.h, decoded.c,
                tuple(record.stored() for record in records) if records is not None else None)


def decode_live(key: StreamKey, body: str) -> LiveChunk:
    decoded = json.loads(body)
    return LiveChunk(key, decoded["q"], decoded["d"], decoded.get("s"), decoded.get("a"),
                     decoded.get("i"))
