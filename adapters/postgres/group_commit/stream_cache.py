"""Committed stream states this process has already decoded, by version.

Every command loads its stream twice (unlocked by the use case, locked by the
unit of work), and decoding a snapshot costs more than the rest of a small
append. Rules:
- an entry is the committed state of a stream at a version; a stream row's
  version changes with every commit, so (id, version) names one state for good;
- a load asks the database for the row's version and receives the snapshot
  only when that version is not the one held here, so the cache can never
  serve a stale state;
- entries are never handed out, only clones; only states read from the
  database or written by a successful COMMIT are remembered;
- bounded: when full it starts again empty.
"""

from __future__ import annotations

from typing import Any, TypeVar
from uuid import UUID

from eventsourcing.domain import Aggregate

from domain.stream import Stream

A = TypeVar("A", bound=Aggregate)

_FLAT_CONTAINERS = (list, dict, set)


def clone(aggregate: A) -> A:
    """An independent copy, far cheaper than a deep copy.

    Relies on a rule the domain keeps (and tests/integration/test_stream_cache.py
    checks): aggregate attributes are immutable values or flat lists/dicts/sets of
    immutable values, so copying each container one level deep copies everything.
    """
    state: dict[str, Any] = {
        name: value.copy() if type(value) in _FLAT_CONTAINERS else value
        for name, value in vars(aggregate).items()
    }
    state["_pending_events"] = []
    copied = object.__new__(type(aggregate))
    object.__setattr__(copied, "__dict__", state)
    return copied


class StreamCache:
    def __init__(self, limit: int = 10_000) -> None:
        self._limit = limit
        self._entries: dict[UUID, Stream] = {}

    def version(self, stream_id: UUID) -> int:
        """The version held for this stream, or -1 (no version is negative)."""
        entry = self._entries.get(stream_id)
        return entry.version if entry is not None else -1

    def pristine(self, stream_id: UUID, version: int) -> Stream | None:
        """The held state itself, read-only: callers must clone before changing it."""
        entry = self._entries.get(stream_id)
        return entry if entry is not None and entry.version == version else None

    def remember(self, stream: Stream) -> None:
        """Keep a state read from the database or just committed (it must never change
        afterwards: pass a clone if someone else holds the object)."""
        if len(self._entries) >= self._limit:
            self._entries.clear()
        self._entries[stream.id] = stream
