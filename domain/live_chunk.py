"""Best-effort live chunks: redaction, the size cap, its truncation marker, and the
monotonic `seq`."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from domain.errors import InvalidRecord
from domain.redaction import redact

LIVE_CHUNK_MAX_BYTES = 7000


_ENCODER = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def compact_json(value: Any) -> bytes:
    """The canonical encoding of a JSON value: compact UTF-8.

    Values JSON cannot carry faithfully (NaN, infinities, unpaired surrogates,
    non-JSON types) are refused here, before anything is stored or sent.
    """
    try:
        return _ENCODER.encode(value).encode()
    except (ValueError, TypeError, UnicodeEncodeError) as error:
        raise InvalidRecord(f"not representable as JSON: {error}") from None


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


@dataclass
class LiveSequencer:
    """Per-stream monotonic sequence numbers that stay monotonic across restarts.

    The high bits are an epoch fixed when the sequencer starts (the caller
    passes a value that grows across restarts, e.g. start time in ms); the low
    20 bits count chunks within the epoch.
    """

    epoch: int
    _counters: dict[str, int] | None = None
    COUNTER_BITS = 20

    def next(self, channel: str) -> int:
        if self._counters is None:
            self._counters = {}
        count = self._counters.get(channel, 0)
        if count >= 2**self.COUNTER_BITS - 1:
            self.epoch += 1
            count = 0
        self._counters[channel] = count + 1
        return (self.epoch << self.COUNTER_BITS) | count
