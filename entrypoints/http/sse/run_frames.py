"""Run follow frames as Server-Sent Event bytes (docs/api.md, ADR 0073).

- `id: <compound cursor>`, `event: record`, `data: <record envelope JSON>` with the
  envelope's `stream_id` first;
- `event: live` (no id), `data: {stream_id, seq, data, source, attempt, index}`;
- `event: resync`, `data: <the 410 problem body>` with its `stream_id`: that stream ends;
- `event: end`, `data: {stream_id, reason: "closed", last_sequence}`: that stream ends;
- `event: run_end`, `data: {reason, cursor}`, and a `retry:` for a shutdown: the last frame;
- `: ping` (a comment).

Every frame of a stream names it, and only record frames carry an `id:`: the cursor
after them, which is all a reader sends back (`Last-Event-ID`) to resume every stream.
"""

from __future__ import annotations

import random
from typing import assert_never

from application.follow_frames import EndFrame, KeepaliveFrame, LiveFrame, RecordFrame, ResyncFrame
from application.run_follow import RunEndFrame, RunFrame, StreamFrame
from application.views import record_envelope
from domain.canonical_json import wire_json
from domain.errors import CursorPruned
from entrypoints.http.problems import problem_body
from entrypoints.http.sse.frames import KEEPALIVE, SHUTDOWN_RETRY_MS
from entrypoints.http.sse.frames import _data as _data


def encode_run_frame(frame: RunFrame, run_id: str) -> bytes:
    match frame:
        case StreamFrame():
            return _stream_frame(frame, run_id)
        case KeepaliveFrame():
            return KEEPALIVE
        case RunEndFrame(reason=reason, cursor=cursor):
            data = _data(wire_json({"reason": reason, "cursor": cursor.text()}))
            if reason != "shutdown":
                return b"event: run_end\r\n%s\r\n" % data
            # Readers of a node that stops come back at once: spread them over a few seconds.
            retry = random.randint(*SHUTDOWN_RETRY_MS)
            return b"event: run_end\r\n%sretry: %d\r\n\r\n" % (data, retry)
    assert_never(frame)


def _stream_frame(frame: StreamFrame, run_id: str) -> bytes:
    stream_id = frame.stream_id
    match frame.frame:
        case RecordFrame(record=record):
            envelope = record_envelope(record, run_id, stream_id, verbatim=True)
            return b"id: %s\r\nevent: record\r\n%s\r\n" % (
                frame.cursor.text().encode(), _data(wire_json({"stream_id": stream_id,
                                                               **envelope})))
        case LiveFrame(chunk=chunk):
            return b"event: live\r\n%s\r\n" % _data(wire_json({
                "stream_id": stream_id, "seq": chunk.seq, "data": chunk.data,
                "source": chunk.source, "attempt": chunk.attempt, "index": chunk.index}))
        case ResyncFrame(requested=requested, earliest=earliest, latest=latest):
            body = problem_body(CursorPruned(requested, earliest, latest))
            return b"event: resync\r\n%s\r\n" % _data(wire_json({"stream_id": stream_id,
                                                                 **body}))
        case EndFrame(last_sequence=last_sequence, reason=reason):
            return b"event: end\r\n%s\r\n" % _data(wire_json({
                "stream_id": stream_id, "reason": reason, "last_sequence": last_sequence}))
    assert_never(frame.frame)
