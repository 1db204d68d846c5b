"""The compound cursor of a run follow: one exact cursor per stream (ADR 0073).

Its text is `stream_id=sequence` entries joined by `,`, ascending by stream id; a stream
at 0 is left out, and a stream the text does not name is read from its start, so the
empty text is the cursor before everything.

Rules:
- a text of more than `MAX_RUN_CURSOR_BYTES` characters or `MAX_RUN_CURSOR_STREAMS`
  entries is 400 `cursor_too_large`, decided on its length before it is parsed;
- each entry is an id (`validate_id`), `=`, and a cursor (`parse_cursor`), each stream
  named once; anything else is 400 `invalid_cursor`;
- a run follow covers only as many streams as `fits` allows, each entry counted at its
  largest, so every cursor it writes can be sent back within these bounds.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from domain.cursor import parse_cursor
from domain.errors import CursorTooLarge, InvalidCursor, InvalidIdentifier
from domain.identifiers import validate_id

MAX_RUN_CURSOR_STREAMS = 64
MAX_RUN_CURSOR_BYTES = 4096
"""Half the default request-header ceiling: the cursor comes back as `Last-Event-ID`."""
_WIDEST_SEQUENCE = 19


@dataclass(frozen=True)
class RunCursor:
    """Each stream's cursor (absent: 0)."""

    positions: Mapping[str, int] = field(default_factory=lambda: MappingProxyType({}))

    def at(self, stream_id: str) -> int:
        return self.positions.get(stream_id, 0)

    def moved(self, stream_id: str, sequence: int) -> RunCursor:
        return RunCursor(MappingProxyType({**self.positions, stream_id: sequence}))

    def only(self, stream_ids: Iterable[str]) -> RunCursor:
        """This cursor restricted to these streams."""
        kept = set(stream_ids)
        return RunCursor(MappingProxyType(
            {stream_id: sequence for stream_id, sequence in self.positions.items()
             if stream_id in kept}))

    def text(self) -> str:
        return ",".join(f"{stream_id}={sequence}"
                        for stream_id, sequence in sorted(self.positions.items())
                        if sequence > 0)

    @classmethod
    def parse(cls, raw: str, what: str = "after") -> RunCursor:
        text = raw.strip()
        if len(text) > MAX_RUN_CURSOR_BYTES or text.count(",") >= MAX_RUN_CURSOR_STREAMS:
            raise CursorTooLarge(
                f"{what} may name at most {MAX_RUN_CURSOR_STREAMS} streams in at most "
                f"{MAX_RUN_CURSOR_BYTES} characters", field=what,
                max_streams=MAX_RUN_CURSOR_STREAMS, max_bytes=MAX_RUN_CURSOR_BYTES)
        positions: dict[str, int] = {}
        for entry in text.split(",") if text else ():
            stream_id, equals, sequence = entry.partition("=")
            try:
                validate_id(stream_id, what)
            except InvalidIdentifier:
                raise InvalidCursor(f"{what} must be stream_id=sequence entries joined by ','",
                                    field=what) from None
            if not equals or stream_id in positions:
                raise InvalidCursor(f"{what} must name each stream once, as stream_id=sequence",
                                    field=what)
            positions[stream_id] = parse_cursor(sequence, what) or 0
        return cls(MappingProxyType(positions))


def fits(stream_ids: Iterable[str]) -> bool:
    """Whether a run follow may cover these streams: their cursor, each at its largest
    sequence, stays within the bounds."""
    ids = list(stream_ids)
    widest = sum(len(stream_id) + 2 + _WIDEST_SEQUENCE for stream_id in ids) - 1
    return len(ids) <= MAX_RUN_CURSOR_STREAMS and widest <= MAX_RUN_CURSOR_BYTES
