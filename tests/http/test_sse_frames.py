"""Follow frames encoded as SSE bytes exactly as SPEC §4 says."""

from __future__ import annotations

import json
from datetime import UTC, datetime

from application.following import EndFrame, KeepaliveFrame, LiveFrame, RecordFrame, ResyncFrame
from application.ports import LiveChunk, StoredRecord
from domain.identifiers import StreamKey
from entrypoints.http.sse import to_message

WHEN = datetime(2026, 1, 1, tzinfo=UTC)


def lines(frame: object) -> list[str]:
    encoded = to_message(frame, "run", "s").encode().decode()  # type: ignore[arg-type]
    assert encoded.endswith("\r\n\r\n")
    return encoded.removesuffix("\r\n\r\n").split("\r\n")


def test_a_record_frame_has_event_id_and_the_envelope_on_one_data_line() -> None:
    record = StoredRecord(sequence=7, content_type="application/json", appended_at=WHEN, size=9,
                          payload={"text": "two\nlines"}, has_payload=True)
    encoded = lines(RecordFrame(record))
    assert sorted(line.split(": ", 1)[0] for line in encoded) == ["data", "event", "id"]
    assert "event: record" in encoded
    assert "id: 7" in encoded
    data = next(line for line in encoded if line.startswith("data: ")).removeprefix("data: ")
    assert json.loads(data) == {"sequence": 7, "content_type": "application/json",
                                "appended_at": WHEN.isoformat(),
                                "payload": {"text": "two\nlines"}}


def test_keepalive_is_a_bare_comment() -> None:
    assert lines(KeepaliveFrame()) == [": ping"]


def test_live_frames_have_no_id() -> None:
    chunk = LiveChunk(StreamKey("t", "run", "s"), seq=5, data="tok", source="model_turn",
                      attempt=2, index=0)
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
