"""A batch's `event: data` bytes, made once per process for all the facade's SSE readers
(ADR 0071), as `FrameMemo` does for the native frames (ADR 0048).

Rules:
- the event depends on the stream, its content type and the batch's records, and on nothing
  of the reader: readers that follow one stream live get the same batches (one per wake),
  so the first builds the event and the others send the same bytes;
- an entry serves only the records it was built from (the same objects, or equal ones): a
  stream created again under an erased one's key never gets the old bytes;
- bounded by `max_bytes` (an entry weighs its bytes twice: they and the records they hold);
  the oldest entries go first, and an event heavier than the bound is never kept.
"""

from __future__ import annotations

import base64
import re
from collections.abc import Callable

from application.ports.records import StoredRecord
from domain.identifiers import StreamKey

MEMO_BYTES = 16 * 2**20
_LINE_BREAK = re.compile(r"\r\n|\r|\n")

Slot = tuple[StreamKey, str, int, int]


def data_event(text: str) -> bytes:
    """`event: data` with one `data:` line per line of the text: a payload can never end
    an event or start a forged one."""
    lines = _LINE_BREAK.split(text)
    return ("event: data\n" + "".join(data_line(line) for line in lines) + "\n").encode()


def data_line(line: str) -> str:
    """`data:` and the line; a line that starts with a space gets one more, which the
    reader strips (an SSE reader removes one space after the colon)."""
    return f"data: {line}\n" if line.startswith(" ") else f"data:{line}\n"


def encode(body: bytes, text: bool) -> bytes:
    """The event for a batch's body: its text, or base64 for binary content."""
    return data_event(body.decode() if text else base64.b64encode(body).decode())


class DataMemo:
    def __init__(self, max_bytes: int = MEMO_BYTES) -> None:
        self.max_bytes = max_bytes
        self.builds = 0
        """How many events were built (a shared event counts once)."""
        self._entries: dict[Slot, tuple[list[StoredRecord], bytes]] = {}
        self._bytes = 0

    def event(self, key: StreamKey, content_type: str, records: list[StoredRecord],
              build: Callable[[list[StoredRecord]], bytes]) -> bytes:
        """The `event: data` of a non-empty batch; `build` makes it when not kept."""
        slot = (key, content_type, records[0].sequence, records[-1].sequence)
        entry = self._entries.get(slot)
        if entry is not None and _same(entry[0], records):
            return entry[1]
        event = build(records)
        self.builds += 1
        self._keep(slot, records, event)
        return event

    @property
    def size_bytes(self) -> int:
        return self._bytes

    def _keep(self, slot: Slot, records: list[StoredRecord], event: bytes) -> None:
        replaced = self._entries.pop(slot, None)
        if replaced is not None:
            self._bytes -= 2 * len(replaced[1])
        weight = 2 * len(event)
        if weight > self.max_bytes:
            return
        self._entries[slot] = (records, event)
        self._bytes += weight
        while self._bytes > self.max_bytes:
            oldest = next(iter(self._entries))
            self._bytes -= 2 * len(self._entries.pop(oldest)[1])


def _same(kept: list[StoredRecord], records: list[StoredRecord]) -> bool:
    return len(kept) == len(records) and all(
        old is new or old == new for old, new in zip(kept, records, strict=True))
