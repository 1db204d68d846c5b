"""Follow frames as Server-Sent Event bytes (docs/api.md), a record's built once per process.

- `id: <sequence>`, `event: record`, `data: <record envelope JSON>`;
- `event: live` (no id), `data: {seq, data, source, attempt, index}`;
- `: ping` (a comment: clients see no event);
- `event: resync`, `data: <the 410 problem body>`;
- `event: end`, `data: {reason, last_sequence}`, and a `retry:` for a shutdown.

The lines come in that order, each ended by CRLF, the frame by an empty line: the bytes
Litestar's `ServerSentEventMessage` would write, without building one per reader.

A record's frame is the same for every reader of its stream: it depends on the stream's
run and stream ids and on the record, and on nothing of the reader (redaction is a pin
of the stream, applied before the record was stored; access and egress are checked when
the follow opens, ADR 0048). So the first reader that needs it builds it, and every
other reader of that stream sends the same bytes: a record costs one build per process,
however many follow it (`FrameMemo`).
"""

from __future__ import annotations

import random
from typing import assert_never

from application.follow_frames import (
    EndFrame,
    Frame,
    KeepaliveFrame,
    LiveFrame,
    RecordFrame,
    ResyncFrame,
)
from application.ports.records import StoredRecord
from application.views import envelope_json
from domain.canonical_json import wire_json
from domain.errors import CursorPruned
from domain.identifiers import StreamKey
from entrypoints.http.problems import problem_body

SHUTDOWN_RETRY_MS = (500, 5000)
"""The `retry:` of a shutdown `end` frame is drawn from this range (milliseconds)."""
MEMO_BYTES = 16 * 2**20
"""What the frames kept for sharing, and their records, may weigh (oldest go first)."""
KEEPALIVE = b": ping\r\n\r\n"


def record_frame(record: StoredRecord, run_id: str, stream_id: str) -> bytes:
    return b"id: %d\r\nevent: record\r\n%s\r\n" % (
        record.sequence, _data(envelope_json(record, run_id, stream_id)))


def encode_frame(frame: Frame, key: StreamKey, memo: FrameMemo) -> bytes:
    match frame:
        case RecordFrame(record=record):
            return memo.record_frame(key, record)
        case KeepaliveFrame():
            return KEEPALIVE
        case LiveFrame(chunk=chunk):
            return b"event: live\r\n%s\r\n" % _data(wire_json({
                "seq": chunk.seq, "data": chunk.data, "source": chunk.source,
                "attempt": chunk.attempt, "index": chunk.index}))
        case ResyncFrame(requested=requested, earliest=earliest, latest=latest):
            body = problem_body(CursorPruned(requested, earliest, latest))
            return b"event: resync\r\n%s\r\n" % _data(wire_json(body))
        case EndFrame(last_sequence=last_sequence, reason=reason):
            data = _data(wire_json({"reason": reason, "last_sequence": last_sequence}))
            if reason != "shutdown":
                return b"event: end\r\n%s\r\n" % data
            # Readers of a node that stops come back at once: spread them over a few seconds.
            retry = random.randint(*SHUTDOWN_RETRY_MS)
            return b"event: end\r\n%sretry: %d\r\n\r\n" % (data, retry)
    assert_never(frame)


def _data(text: bytes) -> bytes:
    """`data:` lines: one, unless the text holds a line break (compact JSON never does; a
    stored payload's text could), then one per line, as the SSE format joins them."""
    if b"\n" not in text and b"\r" not in text:
        return b"data: " + text + b"\r\n"
    return b"".join(b"data: " + line + b"\r\n" for line in text.splitlines())


class FrameMemo:
    """Record frames by (stream, sequence), shared by the readers of this process.

    An entry serves only the record it was built from (the same object, or an equal one):
    a stream created again under an erased one's key starts again at sequence 1 with
    other records, and never gets the old bytes. Bounded by `max_bytes`."""

    def __init__(self, max_bytes: int = MEMO_BYTES) -> None:
        self.max_bytes = max_bytes
        self.builds = 0
        """How many frames were built (a shared frame counts once)."""
        self._entries: dict[tuple[StreamKey, int], tuple[StoredRecord, bytes]] = {}
        self._bytes = 0

    def record_frame(self, key: StreamKey, record: StoredRecord) -> bytes:
        slot = (key, record.sequence)
        entry = self._entries.get(slot)
        if entry is not None and (entry[0] is record or entry[0] == record):
            return entry[1]
        frame = record_frame(record, key.run_id, key.stream_id)
        self.builds += 1
        self._keep(slot, record, frame)
        return frame

    @property
    def size_bytes(self) -> int:
        return self._bytes

    def _keep(self, slot: tuple[StreamKey, int], record: StoredRecord, frame: bytes) -> None:
        # An entry weighs its frame and the record it was built from (about as much again).
        weight = 2 * len(frame)
        replaced = self._entries.pop(slot, None)
        if replaced is not None:
            self._bytes -= 2 * len(replaced[1])
        if weight > self.max_bytes:
            return
        self._entries[slot] = (record, frame)
        self._bytes += weight
        while self._bytes > self.max_bytes:
            oldest = next(iter(self._entries))
            self._bytes -= 2 * len(self._entries.pop(oldest)[1])
