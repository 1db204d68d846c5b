"""A caught-up reader's record frames, written straight to its connection (ADR 0079).

The follow decides what is sent (`OpenFollow.serve_directly`); this only turns the records
into the frames every reader of the stream shares (`FrameMemo`) and hands them to the
request's `BodySlot`. The bytes of one wake are built once for all its readers: a wake's
records reach each caught-up reader as the same tuple, so the last one's bytes are kept.
"""

from __future__ import annotations

from collections.abc import Sequence

from application.ports.records import StoredRecord
from domain.identifiers import StreamKey
from entrypoints.http.sse.frames import FrameMemo
from entrypoints.http.sse.transport import BodySlot


class DirectFrames:
    """Implements `DirectSink` over one event-stream response's `BodySlot`."""

    _last: tuple[Sequence[StoredRecord], StreamKey | None, bytes] = ((), None, b"")
    """The records last written, their stream and their bytes."""

    def __init__(self, slot: BodySlot, memo: FrameMemo) -> None:
        self._slot = slot
        self._memo = memo

    def ready(self) -> bool:
        return self._slot.ready()

    def send_records(self, key: StreamKey, records: Sequence[StoredRecord]) -> None:
        last, last_key, data = DirectFrames._last
        if records is not last or (key is not last_key and key != last_key):
            data = b"".join(self._memo.record_frame(key, record) for record in records)
            DirectFrames._last = (records, key, data)
        self._slot.write(data)
