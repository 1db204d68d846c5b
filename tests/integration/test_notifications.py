"""NOTIFY payloads: records ride along exactly, and nothing ever exceeds the limit."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from adapters.postgres.notifications import (
    PAYLOAD_LIMIT_BYTES,
    _record_json,
    decode_live,
    decode_wake,
    encode_live,
    encode_wake,
    split_payload,
)
from application.ports.records import StoredRecord
from application.ports.waking import LiveChunk, Wake
from domain.canonical_json import compact_text
from domain.identifiers import StreamKey
from domain.records import ObjectRef

KEY = StreamKey("tenant", "run-1", "answer")
AT = datetime(2026, 1, 1, 12, 0, 0, 123456, tzinfo=UTC)


def decoded(payload: str) -> Wake:
    origin, channel_key, body = split_payload(payload)
    # A closing wake names no origin: every listener, its sender's too, delivers it in
    # commit order behind the live chunks (ADR 0056).
    wake = decode_wake(KEY, body)
    assert (origin, StreamKey.from_channel_key(channel_key)) == (
        "" if wake.closed else "me", KEY)
    return wake


def test_every_kind_of_record_rides_a_wake_exactly() -> None:
    records = (
        StoredRecord(1, "application/json", AT, 20, payload_json='{"t":"héllo ✓","n":[1,2.5]}',
                     idempotency_key="k1"),
        StoredRecord(2, "application/json", AT, 4, payload_json="null"),
        StoredRecord(3, "application/octet-stream", AT, 4, data=b"\x00\x01\xfe\xff"),
        StoredRecord(4, "application/pdf", AT, 90,
                     object=ObjectRef("obj-1", 123, "a" * 64, "application/pdf")),
    )
    wake = Wake(KEY, 4, True, records)
    assert decoded(encode_wake(wake, "me")) == wake
    assert decoded(encode_wake(Wake(KEY, 4, False, ()), "me")) == Wake(KEY, 4, False, ())
    assert decoded(encode_wake(Wake(KEY, 4, False, None), "me")) == Wake(KEY, 4, False, None)


def test_a_payload_rides_a_wake_as_its_text_and_is_parsed_only_when_asked() -> None:
    """The stored text comes back byte for byte (spellings a re-encoding would change
    included), and decoding a wake parses no payload (ADR 0048)."""
    text = '{"z":1e+16,"a":[1.50,-0.0],"k":{"é":"✓"}}'
    wake = Wake(KEY, 1, False, (StoredRecord(1, "application/json", AT, len(text),
                                             payload_json=text),))
    record, = decoded(encode_wake(wake, "me")).records or ()
    assert record.payload_json == text
    assert "payload" not in vars(record)  # not parsed yet
    assert record.payload == {"z": 1e16, "a": [1.5, -0.0], "k": {"é": "✓"}}


def test_a_wake_whose_records_would_not_fit_goes_without_them() -> None:
    # 6000 bytes of binary are carried by the size rule, but base64 makes them 8000.
    big = StoredRecord(1, "application/octet-stream", AT, 6000, data=bytes(6000))
    payload = encode_wake(Wake(KEY, 1, False, (big,)), "me")
    assert len(payload.encode()) <= PAYLOAD_LIMIT_BYTES
    assert decoded(payload) == Wake(KEY, 1, False, None)


def test_a_wake_counts_bytes_not_characters() -> None:
    text = "✓" * 2700  # 2700 characters, 8100 bytes
    record = StoredRecord(1, "application/json", AT, 8102, payload_json=compact_text(text))
    payload = encode_wake(Wake(KEY, 1, False, (record,)), "me")
    assert len(payload.encode()) <= PAYLOAD_LIMIT_BYTES
    assert decoded(payload).records is None
    record = StoredRecord(1, "application/json", AT, 2702, payload_json=compact_text(text[:900]))
    assert decoded(encode_wake(Wake(KEY, 1, False, (record,)), "me")).records == (record,)


def test_live_chunks_round_trip_and_oversized_ones_are_dropped() -> None:
    chunk = LiveChunk(KEY, 9, {"token": "hi"}, source="model_turn", attempt=2, index=5)
    payload = encode_live(chunk, "me")
    assert payload is not None
    origin, channel_key, body = split_payload(payload)
    assert (origin, channel_key) == ("me", KEY.channel_key)
    assert decode_live(KEY, body) == chunk
    assert decode_live(KEY, split_payload(encode_live(LiveChunk(KEY, 1, None), "me") or "")[2]
                       ) == LiveChunk(KEY, 1, None)
    assert encode_live(LiveChunk(KEY, 10, "x" * PAYLOAD_LIMIT_BYTES), "me") is None
    assert encode_live(LiveChunk(KEY, 11, {1j}), "me") is None  # not JSON at all


@pytest.mark.parametrize("count", [1, 7, 60, 100])
def test_records_that_just_fit_ride_their_wake_and_one_character_more_does_not(
        count: int) -> None:
    """The short cut that skips encoding the records of a large batch (their texts hold
    more characters than the limit) never leaves out records that would have fitted:
    here the bound it counts is as tight as it gets (one-digit numbers, a time without
    fractions or zone, a one-character payload text beside a growing one)."""
    at = datetime(2026, 1, 1)

    def records(length: int) -> tuple[StoredRecord, ...]:
        texts = [compact_text("x" * length)] + ["0"] * (count - 1)
        return tuple(StoredRecord(1, "a/b", at, 1, payload_json=text) for text in texts)

    def size(length: int) -> int:
        texts = ",".join(map(_record_json, records(length)))
        return len(f'me\n{KEY.channel_key}\n{{"h":1,"c":false,"r":[{texts}]}}'.encode())

    length = PAYLOAD_LIMIT_BYTES - size(0)
    assert size(length) == PAYLOAD_LIMIT_BYTES
    assert decoded(encode_wake(Wake(KEY, 1, False, records(length)), "me")).records \
        == records(length)
    assert decoded(encode_wake(Wake(KEY, 1, False, records(length + 1)), "me")).records is None
