"""Follow frames encoded as SSE bytes exactly as SPEC §4 says, and a record's frame built once
per process whoever reads it."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest
from litestar.response import ServerSentEventMessage

from application.follow_frames import (
    EndFrame,
    Frame,
    KeepaliveFrame,
    LiveFrame,
    RecordFrame,
    ResyncFrame,
)
from application.ports.records import StoredRecord
from application.ports.waking import LiveChunk
from application.views import record_envelope
from domain.canonical_json import compact_text, wire_json
from domain.errors import CursorPruned
from domain.identifiers import StreamKey
from domain.records import ObjectRef
from entrypoints.http.problems import problem_body
from entrypoints.http.sse.frames import FrameMemo, encode_frame

WHEN = datetime(2026, 1, 1, tzinfo=UTC)
KEY = StreamKey("t", "run", "s")


def json_record(sequence: int, payload: object, **fields: object) -> StoredRecord:
    return StoredRecord(sequence=sequence, content_type="application/json", appended_at=WHEN,
                        size=9, payload_json=compact_text(payload), **fields)  # type: ignore[arg-type]


def lines(frame: Frame, memo: FrameMemo | None = None) -> list[str]:
    encoded = encode_frame(frame, KEY, memo or FrameMemo()).decode()
    assert encoded.endswith("\r\n\r\n")
    return encoded.removesuffix("\r\n\r\n").split("\r\n")


def test_a_record_frame_has_event_id_and_the_envelope_on_one_data_line() -> None:
    encoded = lines(RecordFrame(json_record(7, {"text": "two\nlines"})))
    assert encoded[:2] == ["id: 7", "event: record"]
    assert len(encoded) == 3
    data = encoded[2].removeprefix("data: ")
    assert json.loads(data) == {"sequence": 7, "content_type": "application/json",
                                "appended_at": WHEN.isoformat(),
                                "payload": {"text": "two\nlines"}}


def test_a_payload_is_sent_as_its_stored_text_never_encoded_again() -> None:
    # Number spellings a re-encoding would change (`1e+16` is json's, msgspec writes `1e16`),
    # key order, non-ASCII text: the frame carries the stored text byte for byte.
    text = '{"z":1e+16,"a":[1.50,-0.0],"é":"✓"}'
    record = StoredRecord(3, "application/json", WHEN, len(text), payload_json=text)
    encoded = encode_frame(RecordFrame(record), KEY, FrameMemo())
    assert b'"payload":' + text.encode() + b"}\r\n\r\n" in encoded


def test_a_stored_text_with_line_breaks_still_makes_one_event() -> None:
    record = StoredRecord(3, "application/json", WHEN, 12, payload_json='{\n"a": 1\r\n}')
    encoded = lines(RecordFrame(record))
    assert encoded[2:] == ['data: {"sequence":3,"content_type":"application/json",'
                           '"appended_at":"2026-01-01T00:00:00+00:00","payload":{', 'data: "a": 1',
                           "data: }}"]


@pytest.mark.parametrize("frame", [
    RecordFrame(json_record(7, {"text": "two\nlines", "n": [1, 2.5, None]},
                            idempotency_key="k-é")),
    RecordFrame(StoredRecord(8, "application/octet-stream", WHEN, 3, data=b"\x00\xff\x10")),
    RecordFrame(StoredRecord(9, "application/pdf", WHEN, 90,
                             object=ObjectRef("o1", 1000, "ab" * 32, "application/pdf"))),
    RecordFrame(json_record(10, None)),
    KeepaliveFrame(),
    LiveFrame(LiveChunk(KEY, seq=5, data={"tok": "é"}, source="model_turn", attempt=2,
                        index=0)),
    ResyncFrame(requested=3, earliest=9, latest=12),
    EndFrame(4),
    EndFrame(4, "token_expired"),
])
def test_frames_are_the_bytes_litestar_writes_for_the_same_event(frame: Frame) -> None:
    """The wire is unchanged from the per-reader messages these bytes replace (ADR 0048)."""
    match frame:
        case RecordFrame(record=record):
            message = ServerSentEventMessage(event="record", id=record.sequence, data=wire_json(
                record_envelope(record, KEY.run_id, KEY.stream_id)).decode())
        case KeepaliveFrame():
            message = ServerSentEventMessage(comment="ping", data=None)
        case LiveFrame(chunk=chunk):
            message = ServerSentEventMessage(event="live", data=wire_json({
                "seq": chunk.seq, "data": chunk.data, "source": chunk.source,
                "attempt": chunk.attempt, "index": chunk.index}).decode())
        case ResyncFrame():
            message = ServerSentEventMessage(event="resync", data=wire_json(problem_body(
                CursorPruned(frame.requested, frame.earliest, frame.latest))).decode())
        case EndFrame():
            message = ServerSentEventMessage(event="end", data=wire_json(
                {"reason": frame.reason, "last_sequence": frame.last_sequence}).decode())
    assert encode_frame(frame, KEY, FrameMemo()) == message.encode()


def test_a_shutdown_end_carries_a_jittered_retry() -> None:
    encoded = lines(EndFrame(4, "shutdown"))
    assert encoded[:2] == ["event: end", 'data: {"reason":"shutdown","last_sequence":4}']
    assert encoded[2].startswith("retry: ")
    assert 500 <= int(encoded[2].removeprefix("retry: ")) <= 5000


def test_keepalive_is_a_bare_comment() -> None:
    assert lines(KeepaliveFrame()) == [": ping"]


def test_live_frames_have_no_id() -> None:
    chunk = LiveChunk(KEY, seq=5, data="tok", source="model_turn", attempt=2, index=0)
    encoded = lines(LiveFrame(chunk))
    assert encoded[0] == "event: live"
    assert not any(line.startswith("id:") for line in encoded)
    assert json.loads(encoded[1].removeprefix("data: ")) == {
        "seq": 5, "data": "tok", "source": "model_turn", "attempt": 2, "index": 0}


def test_resync_carries_the_410_body_and_end_the_last_sequence() -> None:
    resync = lines(ResyncFrame(requested=3, earliest=9, latest=12))
    assert resync[0] == "event: resync"
    body = json.loads(resync[1].removeprefix("data: "))
    assert (body["status"], body["code"], body["requested"], body["earliest"], body["latest"],
            body["reason"]) == (410, "cursor_pruned", 3, 9, 12, "resync")
    assert lines(EndFrame(4)) == ["event: end", 'data: {"reason":"closed","last_sequence":4}']


# -- built once ------------------------------------------------------------------------------


def test_many_readers_of_a_record_share_one_build_and_one_bytes_object() -> None:
    memo = FrameMemo()
    record = json_record(1, {"n": 1})
    frames = [encode_frame(RecordFrame(record), KEY, memo) for _ in range(1000)]
    assert memo.builds == 1
    assert all(frame is frames[0] for frame in frames)


def test_an_equal_record_read_apart_shares_the_frame_too() -> None:
    memo = FrameMemo()
    first = encode_frame(RecordFrame(json_record(1, {"n": 1})), KEY, memo)
    again = encode_frame(RecordFrame(json_record(1, {"n": 1})), KEY, memo)
    assert again is first and memo.builds == 1


def test_frames_never_cross_streams_runs_or_tenants() -> None:
    """The same sequence on another stream, run or tenant is another record: its own frame,
    its own object links."""
    memo = FrameMemo()
    ref = ObjectRef("o1", 10, "ab" * 32, "application/pdf")
    record = StoredRecord(1, "application/pdf", WHEN, 90, object=ref)
    keys = [KEY, StreamKey("t", "run", "other"), StreamKey("t", "run2", "s"),
            StreamKey("t2", "run", "s")]
    frames = [encode_frame(RecordFrame(record), key, memo) for key in keys]
    assert memo.builds == len(keys)
    for key, frame in zip(keys, frames, strict=True):
        href = json.loads(frame.split(b"data: ")[1])["object"]["href"]
        assert href.endswith(f"/runs/{key.run_id}/streams/{key.stream_id}/objects/o1/body")
    # And a record of another tenant's stream, same ids and sequence, never gets ours.
    secret = json_record(1, {"secret": "tenant t"})
    other = json_record(1, {"secret": "tenant t2"})
    ours = encode_frame(RecordFrame(secret), KEY, memo)
    theirs = encode_frame(RecordFrame(other), StreamKey("t2", "run", "s"), memo)
    assert b"tenant t2" in theirs and b"tenant t2" not in ours
    assert b'"tenant t"' not in theirs


def test_a_stream_made_again_under_the_same_key_never_gets_the_old_frame() -> None:
    memo = FrameMemo()
    erased = encode_frame(RecordFrame(json_record(1, {"old": "erased"})), KEY, memo)
    fresh = encode_frame(RecordFrame(json_record(1, {"new": "stream"})), KEY, memo)
    assert b"erased" in erased and b"erased" not in fresh and b"stream" in fresh
    assert memo.builds == 2


def test_the_memo_is_bounded_and_drops_the_oldest_frames_first() -> None:
    memo = FrameMemo(max_bytes=4096)
    frames = [encode_frame(RecordFrame(json_record(n, {"pad": "x" * 200})), KEY, memo)
              for n in range(1, 101)]
    assert memo.size_bytes <= 4096
    assert encode_frame(RecordFrame(json_record(100, {"pad": "x" * 200})), KEY, memo) is frames[-1]
    builds = memo.builds
    encode_frame(RecordFrame(json_record(1, {"pad": "x" * 200})), KEY, memo)
    assert memo.builds == builds + 1  # evicted, so built again (the same bytes)
    huge = json_record(101, {"pad": "x" * 5000})
    assert encode_frame(RecordFrame(huge), KEY, memo) == encode_frame(RecordFrame(huge), KEY,
                                                                     memo)
    assert memo.size_bytes <= 4096
