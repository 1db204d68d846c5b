"""Which of a run's streams a run follow covers, beyond access: `?streams=` and
`?content_class=` (ADR 0073).

Rules:
- `streams` names at most `MAX_RUN_CURSOR_STREAMS` ids, joined by `,`; a
  malformed id is 400 `invalid_identifier`, more ids 400 `too_many_streams_to_follow`;
- `content_class` is matched in its pinned spelling (case-folded, stripped); one outside
  the class alphabet is 400 `invalid_identifier`;
- both given: a stream must match both. A filter naming a stream the caller may not read
  changes nothing: the stream stays absent.
"""

from __future__ import annotations

from dataclasses import dataclass

from domain.content_class import CONTENT_CLASS_PATTERN
from domain.errors import InvalidIdentifier, TooManyStreamsToFollow
from domain.identifiers import validate_id
from domain.run_cursor import MAX_RUN_CURSOR_STREAMS


@dataclass(frozen=True)
class RunFilter:
    stream_ids: frozenset[str] | None = None
    content_class: str | None = None

    def admits(self, stream_id: str, content_class: str) -> bool:
        return ((self.stream_ids is None or stream_id in self.stream_ids)
                and (self.content_class is None or content_class == self.content_class))

    @classmethod
    def parse(cls, streams: str | None, content_class: str | None) -> RunFilter:
        ids = None
        if streams is not None:
            named = streams.split(",")
            if len(named) > MAX_RUN_CURSOR_STREAMS:
                raise TooManyStreamsToFollow(
                    f"streams may name at most {MAX_RUN_CURSOR_STREAMS} streams",
                    limit=MAX_RUN_CURSOR_STREAMS)
            ids = frozenset(validate_id(stream_id.strip(), "streams") for stream_id in named)
        wanted = None
        if content_class is not None:
            wanted = content_class.strip().casefold()
            if CONTENT_CLASS_PATTERN.fullmatch(wanted) is None:
                raise InvalidIdentifier("content_class is not a content class",
                                        field="content_class")
        return cls(ids, wanted)
